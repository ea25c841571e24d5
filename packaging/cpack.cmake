# The Debian package (`make package`, or `cpack -G DEB` in the build directory): included by the
# top CMakeLists.txt, whose binary directory holds CPackConfig.cmake. Everything `cmake --install`
# installs, under /usr: bin/nisa, the Python module in lib/python3/dist-packages/nisa, the
# kernels in share/nisa/kernels_asm, the docs in share/doc/nisa, the man page, the completion.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nisa)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "nisa maintainers")
# CPACK_PACKAGE_CONTACT: set by packaging/CMakeLists.txt (the changelog names it too).
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "assembler, interpreter and debugger of the modelled Neuron ISA")
set(CPACK_PACKAGE_DESCRIPTION
    "nisa assembles .nasm kernels for a modelled Neuron machine, runs them on .npy\n\
inputs with a cost model, profiles them, proves their synchronisation and\n\
debugs them (also from an editor, over the Debug Adapter Protocol). It\n\
includes the Python module nisa.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON) # RelWithDebInfo: the debug information stays in the build tree
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # nisa_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The shared libraries' packages from dpkg-shlibdeps, and what the Python module imports.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-numpy")
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
include(CPack)
