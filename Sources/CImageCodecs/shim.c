// PNG through libpng's classic API, fenced so that its longjmp never crosses
// into Swift: every libpng call happens below a setjmp in this file, and the
// error handler copies libpng's message out before jumping back.
#include "CImageCodecs.h"
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *message;
} error_sink;

static void on_error(png_structp png, png_const_charp text) {
    error_sink *sink = (error_sink *)png_get_error_ptr(png);
    if (sink && sink->message) {
        strncpy(sink->message, text ? text : "libpng error", PARALLAX_PNG_MESSAGE_CAPACITY - 1);
        sink->message[PARALLAX_PNG_MESSAGE_CAPACITY - 1] = 0;
    }
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp text) {
    (void)png;
    (void)text; // Warnings (e.g. an unknown ancillary chunk) do not stop decoding.
}

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t offset;
} memory_reader;

static void read_from_memory(png_structp png, png_bytep out, size_t count) {
    memory_reader *reader = (memory_reader *)png_get_io_ptr(png);
    if (count > reader->size - reader->offset) {
        png_error(png, "file is truncated");
    }
    memcpy(out, reader->data + reader->offset, count);
    reader->offset += count;
}

void parallax_png_free(void *pointer) { free(pointer); }

int parallax_png_decode(const uint8_t *data, size_t size,
                        uint8_t **pixels, int *width, int *height, int *channels,
                        char message[PARALLAX_PNG_MESSAGE_CAPACITY]) {
    *pixels = NULL;
    message[0] = 0;
    if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
        strcpy(message, "not a PNG signature");
        return -1;
    }
    error_sink sink = { message };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
    if (!png) { strcpy(message, "out of memory"); return -1; }
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_read_struct(&png, NULL, NULL); strcpy(message, "out of memory"); return -1; }
    // Written after setjmp and read after a longjmp, hence volatile.
    uint8_t *volatile buffer = NULL;
    png_bytep *volatile rows = NULL;
    memory_reader reader = { data, size, 0 };
    if (setjmp(png_jmpbuf(png))) {
        free(buffer);
        free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    png_set_read_fn(png, &reader, read_from_memory);
    // Refuse absurd dimensions before allocating (a corrupt header could ask for gigabytes).
    png_set_user_limits(png, 1u << 15, 1u << 15);
    png_read_info(png, info);
    int color = png_get_color_type(png, info);
    int depth = png_get_bit_depth(png, info);
    // Deflate compresses at most 1032:1, so the file holds at least 1/1032 of the image's
    // raw bits: a header that claims more pixels than the file can carry is refused before
    // the pixels' memory is allocated (a few bytes could otherwise ask for gigabytes).
    double raw_bytes = (double)png_get_image_width(png, info) * (double)png_get_image_height(png, info)
                     * (double)png_get_channels(png, info) * (double)depth / 8.0;
    if (raw_bytes > (double)size * 1032.0) png_error(png, "file is too short for the image size in its header");
    if (depth == 16) png_set_strip_16(png);
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_set_palette_to_rgb(png);
        if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    }
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int w = (int)png_get_image_width(png, info);
    int h = (int)png_get_image_height(png, info);
    int c = png_get_channels(png, info);
    size_t row_bytes = png_get_rowbytes(png, info);
    if (row_bytes != (size_t)w * (size_t)c) png_error(png, "unexpected row layout after transforms");
    buffer = malloc(row_bytes * (size_t)h);
    rows = malloc(sizeof(png_bytep) * (size_t)h);
    if (!buffer || !rows) png_error(png, "out of memory");
    for (int y = 0; y < h; y++) rows[y] = buffer + row_bytes * (size_t)y;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    *pixels = buffer;
    *width = w;
    *height = h;
    *channels = c;
    return 0;
}

typedef struct {
    uint8_t *data;
    size_t size;
    size_t capacity;
} memory_writer;

static void write_to_memory(png_structp png, png_bytep bytes, size_t count) {
    memory_writer *writer = (memory_writer *)png_get_io_ptr(png);
    if (writer->size + count > writer->capacity) {
        size_t capacity = writer->capacity ? writer->capacity : 1 << 16;
        while (capacity < writer->size + count) capacity *= 2;
        uint8_t *grown = realloc(writer->data, capacity);
        if (!grown) png_error(png, "out of memory");
        writer->data = grown;
        writer->capacity = capacity;
    }
    memcpy(writer->data + writer->size, bytes, count);
    writer->size += count;
}

static void flush_memory(png_structp png) { (void)png; }

// The one PNG writer: `height` rows of `row_bytes` packed samples of `bit_depth` bits in
// `color`. 16-bit samples are in the machine's byte order; PNG's is big-endian, so a
// little-endian machine has libpng swap them as it writes.
static int encode_png(const uint8_t *pixels, size_t row_bytes, int width, int height, int bit_depth, int color,
                      int compression_level, uint8_t **png_out, size_t *png_size,
                      char message[PARALLAX_PNG_MESSAGE_CAPACITY]) {
    *png_out = NULL;
    *png_size = 0;
    message[0] = 0;
    error_sink sink = { message };
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
    if (!png) { strcpy(message, "out of memory"); return -1; }
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_write_struct(&png, NULL); strcpy(message, "out of memory"); return -1; }
    memory_writer writer = { NULL, 0, 0 };
    memory_writer *volatile writer_ref = &writer;
    if (setjmp(png_jmpbuf(png))) {
        free(writer_ref->data);
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_set_write_fn(png, &writer, write_to_memory, flush_memory);
    png_set_compression_level(png, compression_level);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, bit_depth, color,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (bit_depth == 16) png_set_swap(png);
#endif
    for (int y = 0; y < height; y++) png_write_row(png, (png_const_bytep)(pixels + row_bytes * (size_t)y));
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    *png_out = writer.data;
    *png_size = writer.size;
    return 0;
}

int parallax_png_encode_gray16(const uint16_t *samples, int width, int height, int compression_level,
                               uint8_t **png_out, size_t *png_size,
                               char message[PARALLAX_PNG_MESSAGE_CAPACITY]) {
    return encode_png((const uint8_t *)samples, (size_t)width * 2, width, height, 16, PNG_COLOR_TYPE_GRAY,
                      compression_level, png_out, png_size, message);
}

int parallax_png_encode(const uint8_t *pixels, int width, int height, int channels, int compression_level,
                        uint8_t **png_out, size_t *png_size,
                        char message[PARALLAX_PNG_MESSAGE_CAPACITY]) {
    int color;
    switch (channels) {
    case 1: color = PNG_COLOR_TYPE_GRAY; break;
    case 3: color = PNG_COLOR_TYPE_RGB; break;
    case 4: color = PNG_COLOR_TYPE_RGB_ALPHA; break;
    default:
        *png_out = NULL;
        *png_size = 0;
        strcpy(message, "PNG needs 1, 3 or 4 channels");
        return -1;
    }
    return encode_png(pixels, (size_t)width * (size_t)channels, width, height, 8, color, compression_level,
                      png_out, png_size, message);
}
