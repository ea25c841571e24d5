# nisa_json_version(FILE VAR): the top-level "version" of a package.json.
function(nisa_json_version file var)
  file(READ ${file} json)
  string(JSON v ERROR_VARIABLE err GET "${json}" version)
  if(err)
    message(FATAL_ERROR "${file}: no \"version\" (${err})")
  endif()
  set(${var} "${v}" PARENT_SCOPE)
endfunction()

# As a script (the test Packaging.version_agrees): cmake -DNISA=... -DVERSION=... -DPACKAGE_JSON=...
# -P version.cmake checks that `nisa --version` and package.json state VERSION.
if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  execute_process(COMMAND ${NISA} --version OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT out STREQUAL "nisa ${VERSION}\n")
    message(FATAL_ERROR "`nisa --version` printed \"${out}\" (exit ${rc}), want \"nisa ${VERSION}\"")
  endif()
  nisa_json_version(${PACKAGE_JSON} v)
  if(NOT v STREQUAL VERSION)
    message(FATAL_ERROR "${PACKAGE_JSON} states version \"${v}\", want ${VERSION}")
  endif()
  message(STATUS "nisa --version and ${PACKAGE_JSON}: ${VERSION}")
endif()
