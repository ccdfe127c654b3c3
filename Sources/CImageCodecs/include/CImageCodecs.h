// libpng and libjpeg-turbo (TurboJPEG API) for ParallaxImage's codecs.
// libpng reports errors through longjmp, which Swift cannot catch, so the PNG
// entry points are wrapped in C functions that return an error code and message.
#ifndef PARALLAX_CIMAGECODECS_H
#define PARALLAX_CIMAGECODECS_H
#include <stddef.h>
#include <stdint.h>
#include <turbojpeg.h>
#endif
