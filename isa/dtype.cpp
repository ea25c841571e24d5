// Placeholder: the numerics helper replaces this file with the full conversions.
#include "isa/dtype.h"
