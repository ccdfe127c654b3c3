// LAPACKE (the C interface to LAPACK) over OpenBLAS, for ParallaxCalibration.
// Only the header is exposed; every call and its workspace handling is wrapped
// in Swift (ParallaxCalibration/LinearAlgebra).
#ifndef PARALLAX_CLAPACK_H
#define PARALLAX_CLAPACK_H
#include <lapacke.h>
#endif
