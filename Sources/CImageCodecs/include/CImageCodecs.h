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

/// Encodes 16-bit gray samples (width × height, rows packed) as a 16-bit gray PNG in memory,
/// as parallax_png_encode does 8-bit ones.
int parallax_png_encode_gray16(const uint16_t *samples, int width, int height, int compression_level,
                               uint8_t **png, size_t *png_size,
                               char message[PARALLAX_PNG_MESSAGE_CAPACITY]);

/// Releases memory returned by the PNG functions.
void parallax_png_free(void *pointer);

// MARK: Motion-JPEG (mjpeg.c)

/// A libjpeg-turbo decompressor that allocates nothing per frame once it has decoded one
/// (its per-image memory is an arena reset between frames). Use from one thread at a time.
typedef struct parallax_mjpeg_decoder parallax_mjpeg_decoder;

/// Chroma subsampling reported by parallax_mjpeg_header.
enum {
    PARALLAX_MJPEG_GRAY = 0,
    PARALLAX_MJPEG_444 = 1,
    PARALLAX_MJPEG_422 = 2,
    PARALLAX_MJPEG_420 = 3,
    /// Any other sampling, or components that are not YCbCr.
    PARALLAX_MJPEG_OTHER = 4,
};

/// What parallax_mjpeg_decode writes.
enum {
    /// The components' own planes (Y, Cb, Cr at their subsampled sizes), no colour conversion.
    PARALLAX_MJPEG_PLANES = 0,
    /// Luma only.
    PARALLAX_MJPEG_TO_GRAY = 1,
    /// Packed red, green, blue.
    PARALLAX_MJPEG_TO_RGB = 2,
    /// Packed blue, green, red.
    PARALLAX_MJPEG_TO_BGR = 3,
};

/// Failures (negative) returned by the decoder; the message says more.
enum {
    /// The header could not be read: not a JPEG, empty, cut inside the headers.
    PARALLAX_MJPEG_BAD_HEADER = -1,
    /// The data is damaged or ends early (libjpeg-turbo's warnings count).
    PARALLAX_MJPEG_CORRUPT = -2,
    /// The frame decodes to another size than the one asked for.
    PARALLAX_MJPEG_WRONG_LAYOUT = -3,
};

/// A new decoder, or NULL when memory ran out.
parallax_mjpeg_decoder *parallax_mjpeg_decoder_create(void);
/// Frees a decoder and everything it holds.
void parallax_mjpeg_decoder_destroy(parallax_mjpeg_decoder *decoder);
/// The last failure's message.
const char *parallax_mjpeg_message(const parallax_mjpeg_decoder *decoder);

/// Reads the header of the JPEG in `data`: its size and subsampling (PARALLAX_MJPEG_GRAY …).
/// Returns 0, or PARALLAX_MJPEG_BAD_HEADER.
int parallax_mjpeg_header(parallax_mjpeg_decoder *decoder, const uint8_t *data, size_t size,
                          int *width, int *height, int *subsampling);

/// Decodes the JPEG in `data` at 1/`scale` (1, 2, 4 or 8) as `output` (PARALLAX_MJPEG_PLANES …)
/// into `planes` (one plane for the packed outputs, one per component for the planes) with
/// row strides `strides`; `width` × `height` is the size the frame must decode to. Returns 0,
/// or a negative PARALLAX_MJPEG_… failure (the planes may then hold part of an image).
int parallax_mjpeg_decode(parallax_mjpeg_decoder *decoder, const uint8_t *data, size_t size, int output, int scale,
                          uint8_t *const planes[3], const size_t strides[3], int width, int height);

#endif
