// libpng and libjpeg-turbo (TurboJPEG API) for ParallaxImage's codecs.
// libpng reports errors through longjmp, which Swift cannot catch, so the PNG
// entry points are wrapped in C functions that return an error code and message.
#ifndef PARALLAX_CIMAGECODECS_H
#define PARALLAX_CIMAGECODECS_H
#include <stddef.h>
#include <stdint.h>
#include <turbojpeg.h>

/// Size of the message buffer the PNG functions fill on failure.
#define PARALLAX_PNG_MESSAGE_CAPACITY 200

/// Decodes a PNG held in memory into 8-bit pixels.
///
/// Palette images become RGB (RGBA when they carry transparency), gray below
/// 8 bits is expanded, 16-bit samples are reduced to their high byte, and a
/// gray image's alpha channel is dropped. On success `*pixels` holds
/// width × height × channels bytes, rows packed, allocated with malloc (free it
/// with parallax_png_free) and the function returns 0. On failure it returns
/// -1, `*pixels` is NULL and `message` holds libpng's reason.
int parallax_png_decode(const uint8_t *data, size_t size,
                        uint8_t **pixels, int *width, int *height, int *channels,
                        char message[PARALLAX_PNG_MESSAGE_CAPACITY]);

/// Encodes packed 8-bit pixels (1 = gray, 3 = RGB, 4 = RGBA channels) as a PNG
/// in memory. On success `*png` holds `*png_size` bytes allocated with malloc
/// (free it with parallax_png_free) and the function returns 0; on failure -1
/// with `message` filled in.
int parallax_png_encode(const uint8_t *pixels, int width, int height, int channels, int compression_level,
                        uint8_t **png, size_t *png_size,
                        char message[PARALLAX_PNG_MESSAGE_CAPACITY]);

/// Releases memory returned by the PNG functions.
void parallax_png_free(void *pointer);

#endif
