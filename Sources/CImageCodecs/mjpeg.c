// Motion-JPEG decoding through libjpeg-turbo's libjpeg API, with no allocation per frame.
//
// TurboJPEG allocates row pointers and a bounce buffer on every call, and libjpeg's memory
// manager mallocs an image's working memory and frees it again when the image is done. A
// camera decodes thirty frames a second for hours, so the per-image pool is replaced here by
// an arena that is reset, not freed, between frames (libjpeg lets an application replace its
// memory manager's methods: jpeglib.h, struct jpeg_memory_mgr). Allocations in the
// permanent pool (Huffman and quantisation tables, made once) still go to libjpeg's own
// manager, as do virtual arrays (progressive JPEGs only; webcams send baseline).
//
// libjpeg reports errors by longjmp, so every entry point that runs the decoder sets a
// jump point first; warnings (data cut short, extraneous bytes, a damaged entropy segment)
// are turned into errors, so that a damaged frame is never returned as an image.
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>
#include "include/CImageCodecs.h"

/// Bytes every arena allocation is aligned to (libjpeg-turbo's SIMD code wants 32).
#define ARENA_ALIGNMENT 64

struct parallax_mjpeg_decoder {
    // First, so that the j_common_ptr libjpeg passes to callbacks is the decoder.
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr errors;
    struct jpeg_source_mgr source;
    /// libjpeg's own memory methods, for the permanent pool and virtual arrays.
    struct jpeg_memory_mgr original;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX + 64];
    /// Set while the header is being read: failures there are bad headers.
    int readingHeader;

    /// The image pool: `chunks` blocks of memory; allocations are bumped from the current one.
    unsigned char **chunks;
    size_t *chunkSizes;
    int chunkCount, chunkCapacity, current;
    size_t used;
    /// Bytes the image pool needed last time (the next reset makes one chunk this large).
    size_t needed;

    /// The JPEG specification's standard Huffman tables (Annex K: DC and AC, luma and
    /// chroma), as libjpeg's compressor sets them by default. Before every frame the
    /// decoder's tables 0 and 1 are reset to these, so a frame without tables (MJPEG) is read
    /// with the standard ones, never with tables an earlier frame carried.
    JHUFF_TBL standardDC[2], standardAC[2];
    /// Row pointers handed to libjpeg, and scratch rows for rows past an image's edge or
    /// narrower than a block row.
    JSAMPROW *rows;
    size_t rowCapacity;
    unsigned char *scratch;
    size_t scratchBytes;
};

// MARK: Errors

static void parallax_error_exit(j_common_ptr cinfo) {
    parallax_mjpeg_decoder *d = (parallax_mjpeg_decoder *)cinfo;
    (*cinfo->err->format_message)(cinfo, d->message);
    longjmp(d->jump, 1);
}

static void parallax_emit_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    // A warning: the frame is damaged or cut short. Fail it.
    parallax_mjpeg_decoder *d = (parallax_mjpeg_decoder *)cinfo;
    (*cinfo->err->format_message)(cinfo, d->message);
    longjmp(d->jump, 1);
}

// MARK: Source: the frame's bytes in memory

static void source_init(j_decompress_ptr cinfo) { (void)cinfo; }

static const JOCTET end_of_image[2] = { 0xFF, JPEG_EOI };

static boolean source_fill(j_decompress_ptr cinfo) {
    // Asked for more than the frame holds: the data ended early. libjpeg's own memory source
    // warns and inserts an end-of-image marker; the warning fails the frame here.
    WARNMS(cinfo, JWRN_JPEG_EOF);
    cinfo->src->next_input_byte = end_of_image;
    cinfo->src->bytes_in_buffer = 2;
    return TRUE;
}

static void source_skip(j_decompress_ptr cinfo, long count) {
    struct jpeg_source_mgr *src = cinfo->src;
    if (count <= 0) return;
    if ((size_t)count > src->bytes_in_buffer) {
        (void)source_fill(cinfo);
        return;
    }
    src->next_input_byte += count;
    src->bytes_in_buffer -= (size_t)count;
}

static void source_term(j_decompress_ptr cinfo) { (void)cinfo; }

// MARK: The image pool's arena

static void *arena_take(parallax_mjpeg_decoder *d, size_t size) {
    size = (size + ARENA_ALIGNMENT - 1) & ~(size_t)(ARENA_ALIGNMENT - 1);
    d->needed += size;
    while (d->current < d->chunkCount) {
        if (d->used + size <= d->chunkSizes[d->current]) {
            void *p = d->chunks[d->current] + d->used;
            d->used += size;
            return p;
        }
        d->current++;
        d->used = 0;
    }
    // A new chunk (only while the decoder learns how much an image needs).
    if (d->chunkCount == d->chunkCapacity) {
        int capacity = d->chunkCapacity ? 2 * d->chunkCapacity : 8;
        unsigned char **chunks = realloc(d->chunks, (size_t)capacity * sizeof *chunks);
        if (!chunks) return NULL;
        d->chunks = chunks;
        size_t *sizes = realloc(d->chunkSizes, (size_t)capacity * sizeof *sizes);
        if (!sizes) return NULL;
        d->chunkSizes = sizes;
        d->chunkCapacity = capacity;
    }
    size_t chunk = size > (1u << 20) ? size : (1u << 20);
    unsigned char *memory = aligned_alloc(ARENA_ALIGNMENT, chunk);
    if (!memory) return NULL;
    d->chunks[d->chunkCount] = memory;
    d->chunkSizes[d->chunkCount] = chunk;
    d->current = d->chunkCount++;
    d->used = size;
    return memory;
}

/// Ends an image: the arena is reused from its start. When it took several chunks, they
/// become one of the size the image needed, so the next image allocates nothing.
static void arena_reset(parallax_mjpeg_decoder *d) {
    if (d->chunkCount > 1) {
        size_t total = (d->needed + ARENA_ALIGNMENT - 1) & ~(size_t)(ARENA_ALIGNMENT - 1);
        unsigned char *memory = aligned_alloc(ARENA_ALIGNMENT, total);
        if (memory) {
            for (int i = 0; i < d->chunkCount; i++) free(d->chunks[i]);
            d->chunks[0] = memory;
            d->chunkSizes[0] = total;
            d->chunkCount = 1;
        }
    }
    d->current = 0;
    d->used = 0;
    d->needed = 0;
}

static void *pool_alloc_small(j_common_ptr cinfo, int pool, size_t size) {
    parallax_mjpeg_decoder *d = (parallax_mjpeg_decoder *)cinfo;
    if (pool != JPOOL_IMAGE) return d->original.alloc_small(cinfo, pool, size);
    void *p = arena_take(d, size);
    if (!p) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 7);
    return p;
}

static void *pool_alloc_large(j_common_ptr cinfo, int pool, size_t size) {
    parallax_mjpeg_decoder *d = (parallax_mjpeg_decoder *)cinfo;
    if (pool != JPOOL_IMAGE) return d->original.alloc_large(cinfo, pool, size);
    void *p = arena_take(d, size);
    if (!p) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 8);
    return p;
}

static JSAMPARRAY pool_alloc_sarray(j_common_ptr cinfo, int pool, JDIMENSION samplesPerRow, JDIMENSION rowCount) {
    parallax_mjpeg_decoder *d = (parallax_mjpeg_decoder *)cinfo;
    if (pool != JPOOL_IMAGE) return d->original.alloc_sarray(cinfo, pool, samplesPerRow, rowCount);
    // Rows rounded up to 64 samples, as libjpeg-turbo's own manager does for its SIMD code.
    size_t stride = ((size_t)samplesPerRow + 63) & ~(size_t)63;
    JSAMPARRAY rows = pool_alloc_small(cinfo, pool, (size_t)rowCount * sizeof(JSAMPROW));
    JSAMPROW memory = pool_alloc_large(cinfo, pool, stride * rowCount * sizeof(JSAMPLE));
    for (JDIMENSION r = 0; r < rowCount; r++) rows[r] = memory + r * stride;
    return rows;
}

static JBLOCKARRAY pool_alloc_barray(j_common_ptr cinfo, int pool, JDIMENSION blocksPerRow, JDIMENSION rowCount) {
    parallax_mjpeg_decoder *d = (parallax_mjpeg_decoder *)cinfo;
    if (pool != JPOOL_IMAGE) return d->original.alloc_barray(cinfo, pool, blocksPerRow, rowCount);
    JBLOCKARRAY rows = pool_alloc_small(cinfo, pool, (size_t)rowCount * sizeof(JBLOCKROW));
    JBLOCKROW memory = pool_alloc_large(cinfo, pool, (size_t)blocksPerRow * rowCount * sizeof(JBLOCK));
    for (JDIMENSION r = 0; r < rowCount; r++) rows[r] = memory + (size_t)r * blocksPerRow;
    return rows;
}

static void pool_free(j_common_ptr cinfo, int pool) {
    parallax_mjpeg_decoder *d = (parallax_mjpeg_decoder *)cinfo;
    if (pool == JPOOL_IMAGE) arena_reset(d);
    d->original.free_pool(cinfo, pool);
}

// MARK: Life cycle

/// A compressor's fatal error while the standard tables are read: back to the decoder's
/// jump point (the compressor's `client_data` is the decoder).
static void standard_tables_error_exit(j_common_ptr cinfo) {
    parallax_mjpeg_decoder *d = (parallax_mjpeg_decoder *)cinfo->client_data;
    longjmp(d->jump, 1);
}

/// Copies the compressor's default (standard) Huffman tables into `d`.
static int load_standard_tables(parallax_mjpeg_decoder *d) {
    struct jpeg_compress_struct compressor;
    struct jpeg_error_mgr errors;
    compressor.err = jpeg_std_error(&errors);
    errors.error_exit = standard_tables_error_exit;
    compressor.client_data = d;
    jpeg_create_compress(&compressor);
    compressor.in_color_space = JCS_YCbCr;
    compressor.input_components = 3;
    jpeg_set_defaults(&compressor);
    for (int i = 0; i < 2; i++) {
        if (!compressor.dc_huff_tbl_ptrs[i] || !compressor.ac_huff_tbl_ptrs[i]) {
            jpeg_destroy_compress(&compressor);
            return 0;
        }
        d->standardDC[i] = *compressor.dc_huff_tbl_ptrs[i];
        d->standardAC[i] = *compressor.ac_huff_tbl_ptrs[i];
    }
    jpeg_destroy_compress(&compressor);
    return 1;
}

/// Resets the decoder's Huffman tables 0 and 1 that exist to the standard ones (tables not
/// made yet are made standard by libjpeg itself when a frame needs them).
static void reset_huffman_tables(parallax_mjpeg_decoder *d) {
    for (int i = 0; i < 2; i++) {
        if (d->cinfo.dc_huff_tbl_ptrs[i]) *d->cinfo.dc_huff_tbl_ptrs[i] = d->standardDC[i];
        if (d->cinfo.ac_huff_tbl_ptrs[i]) *d->cinfo.ac_huff_tbl_ptrs[i] = d->standardAC[i];
    }
}

parallax_mjpeg_decoder *parallax_mjpeg_decoder_create(void) {
    parallax_mjpeg_decoder *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->cinfo.err = jpeg_std_error(&d->errors);
    d->errors.error_exit = parallax_error_exit;
    d->errors.emit_message = parallax_emit_message;
    // A compressor lends its standard tables (it fails only when memory runs out; what it
    // holds then is lost with the process's memory anyway).
    if (setjmp(d->jump)) {
        free(d);
        return NULL;
    }
    if (!load_standard_tables(d)) {
        free(d);
        return NULL;
    }
    if (setjmp(d->jump)) {
        jpeg_destroy_decompress(&d->cinfo);
        free(d);
        return NULL;
    }
    jpeg_create_decompress(&d->cinfo);
    d->original = *d->cinfo.mem;
    d->cinfo.mem->alloc_small = pool_alloc_small;
    d->cinfo.mem->alloc_large = pool_alloc_large;
    d->cinfo.mem->alloc_sarray = pool_alloc_sarray;
    d->cinfo.mem->alloc_barray = pool_alloc_barray;
    d->cinfo.mem->free_pool = pool_free;
    d->source.init_source = source_init;
    d->source.fill_input_buffer = source_fill;
    d->source.skip_input_data = source_skip;
    d->source.resync_to_restart = jpeg_resync_to_restart;
    d->source.term_source = source_term;
    d->cinfo.src = &d->source;
    return d;
}

void parallax_mjpeg_decoder_destroy(parallax_mjpeg_decoder *d) {
    if (!d) return;
    jpeg_destroy_decompress(&d->cinfo);
    for (int i = 0; i < d->chunkCount; i++) free(d->chunks[i]);
    free(d->chunks);
    free(d->chunkSizes);
    free(d->rows);
    free(d->scratch);
    free(d);
}

const char *parallax_mjpeg_message(const parallax_mjpeg_decoder *d) { return d->message; }

// MARK: Decoding

static void set_input(parallax_mjpeg_decoder *d, const uint8_t *data, size_t size) {
    d->source.next_input_byte = data;
    d->source.bytes_in_buffer = size;
    d->message[0] = 0;
}

static int subsampling_of(const struct jpeg_decompress_struct *c) {
    if (c->num_components == 1) return PARALLAX_MJPEG_GRAY;
    if (c->num_components != 3 || c->jpeg_color_space != JCS_YCbCr) return PARALLAX_MJPEG_OTHER;
    const jpeg_component_info *y = &c->comp_info[0], *cb = &c->comp_info[1], *cr = &c->comp_info[2];
    if (cb->h_samp_factor != 1 || cb->v_samp_factor != 1 || cr->h_samp_factor != 1 || cr->v_samp_factor != 1)
        return PARALLAX_MJPEG_OTHER;
    if (y->h_samp_factor == 1 && y->v_samp_factor == 1) return PARALLAX_MJPEG_444;
    if (y->h_samp_factor == 2 && y->v_samp_factor == 1) return PARALLAX_MJPEG_422;
    if (y->h_samp_factor == 2 && y->v_samp_factor == 2) return PARALLAX_MJPEG_420;
    return PARALLAX_MJPEG_OTHER;
}

int parallax_mjpeg_header(parallax_mjpeg_decoder *d, const uint8_t *data, size_t size,
                          int *width, int *height, int *subsampling) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    if (setjmp(d->jump)) {
        jpeg_abort_decompress(c);
        return PARALLAX_MJPEG_BAD_HEADER;
    }
    set_input(d, data, size);
    jpeg_read_header(c, TRUE);
    *width = (int)c->image_width;
    *height = (int)c->image_height;
    *subsampling = subsampling_of(c);
    jpeg_abort_decompress(c);
    return 0;
}

/// Room for `count` row pointers and `bytes` of scratch rows; false when memory ran out.
static int reserve(parallax_mjpeg_decoder *d, size_t count, size_t bytes) {
    if (count > d->rowCapacity) {
        JSAMPROW *rows = realloc(d->rows, count * sizeof *rows);
        if (!rows) return 0;
        d->rows = rows;
        d->rowCapacity = count;
    }
    if (bytes > d->scratchBytes) {
        unsigned char *scratch = realloc(d->scratch, bytes);
        if (!scratch) return 0;
        d->scratch = scratch;
        d->scratchBytes = bytes;
    }
    return 1;
}

int parallax_mjpeg_decode(parallax_mjpeg_decoder *d, const uint8_t *data, size_t size, int output, int scale,
                          uint8_t *const planes[3], const size_t strides[3], int width, int height) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    d->readingHeader = 1;
    if (setjmp(d->jump)) {
        jpeg_abort_decompress(c);
        return d->readingHeader ? PARALLAX_MJPEG_BAD_HEADER : PARALLAX_MJPEG_CORRUPT;
    }
    set_input(d, data, size);
    reset_huffman_tables(d);
    jpeg_read_header(c, TRUE);
    d->readingHeader = 0;
    c->scale_num = 1;
    c->scale_denom = (unsigned int)scale;
    c->dct_method = JDCT_ISLOW;
    switch (output) {
    case PARALLAX_MJPEG_PLANES: c->raw_data_out = TRUE; break;
    case PARALLAX_MJPEG_TO_GRAY: c->out_color_space = JCS_GRAYSCALE; break;
    // (A gray JPEG is expanded to three equal channels by libjpeg-turbo's own conversion.)
    case PARALLAX_MJPEG_TO_RGB: c->out_color_space = JCS_EXT_RGB; break;
    default: c->out_color_space = JCS_EXT_BGR; break;
    }
    jpeg_start_decompress(c);
    if ((int)c->output_width != width || (int)c->output_height != height) {
        snprintf(d->message, sizeof d->message, "the frame decodes to %ux%u, not the %dx%d asked for",
                 c->output_width, c->output_height, width, height);
        jpeg_abort_decompress(c);
        return PARALLAX_MJPEG_WRONG_LAYOUT;
    }
    if (output != PARALLAX_MJPEG_PLANES) {
        if (!reserve(d, (size_t)height, 0)) ERREXIT1(c, JERR_OUT_OF_MEMORY, 9);
        for (int y = 0; y < height; y++) d->rows[y] = planes[0] + (size_t)y * strides[0];
        while (c->output_scanline < c->output_height) {
            jpeg_read_scanlines(c, d->rows + c->output_scanline, c->output_height - c->output_scanline);
        }
    } else {
        // Raw planes: per call, each component's v_samp_factor × DCT_scaled_size rows of whole
        // blocks. Rows past a plane's height, and every row of a plane narrower than its block
        // rows, go to scratch; the narrow ones are copied out after each call. When scaling,
        // libjpeg gives the chroma twice its share of the scale (it scales chroma up with its
        // IDCT instead of upsampling: jdmaster.c), so those planes come out at twice the
        // size asked for and are averaged down, 2×2 (4:2:0) or 2×1 (4:2:2).
        int components = c->num_components;
        int groupRows[3], planeWidth[3], planeHeight[3], direct[3], factorX[3], factorY[3];
        size_t blockWidth[3], scratchOffset[3], scratchTotal = 0, rowTotal = 0;
        for (int i = 0; i < components; i++) {
            const jpeg_component_info *k = &c->comp_info[i];
            int wantedWidth = (width * k->h_samp_factor + c->max_h_samp_factor - 1) / c->max_h_samp_factor;
            int wantedHeight = (height * k->v_samp_factor + c->max_v_samp_factor - 1) / c->max_v_samp_factor;
            groupRows[i] = k->v_samp_factor * k->DCT_scaled_size;
            blockWidth[i] = (size_t)k->width_in_blocks * (size_t)k->DCT_scaled_size;
            planeWidth[i] = (int)k->downsampled_width;
            planeHeight[i] = (int)k->downsampled_height;
            factorX[i] = planeWidth[i] == wantedWidth ? 1 : planeWidth[i] == 2 * wantedWidth ? 2 : 0;
            factorY[i] = planeHeight[i] == wantedHeight ? 1 : planeHeight[i] == 2 * wantedHeight ? 2 : 0;
            if (!factorX[i] || !factorY[i] || groupRows[i] % factorY[i]) {
                snprintf(d->message, sizeof d->message, "component %d decodes to %dx%d, not %dx%d", i, planeWidth[i],
                         planeHeight[i], wantedWidth, wantedHeight);
                jpeg_abort_decompress(c);
                return PARALLAX_MJPEG_WRONG_LAYOUT;
            }
            direct[i] = factorX[i] == 1 && factorY[i] == 1 && strides[i] >= blockWidth[i];
            scratchOffset[i] = scratchTotal;
            scratchTotal += ((blockWidth[i] + 63) & ~(size_t)63) * (size_t)groupRows[i];
            rowTotal += (size_t)groupRows[i];
        }
        if (!reserve(d, rowTotal, scratchTotal)) ERREXIT1(c, JERR_OUT_OF_MEMORY, 10);
        JSAMPARRAY groups[3];
        size_t next = 0;
        for (int i = 0; i < components; i++) {
            groups[i] = d->rows + next;
            next += (size_t)groupRows[i];
        }
        int lumaGroup = c->max_v_samp_factor * c->min_DCT_scaled_size;
        while (c->output_scanline < c->output_height) {
            int group = (int)c->output_scanline / lumaGroup;
            for (int i = 0; i < components; i++) {
                size_t scratchStride = (blockWidth[i] + 63) & ~(size_t)63;
                for (int r = 0; r < groupRows[i]; r++) {
                    int y = group * groupRows[i] + r;
                    groups[i][r] = direct[i] && y < planeHeight[i] ? planes[i] + (size_t)y * strides[i]
                                                                     : d->scratch + scratchOffset[i] + (size_t)r * scratchStride;
                }
            }
            JDIMENSION read = jpeg_read_raw_data(c, groups, (JDIMENSION)lumaGroup);
            if (read == 0) ERREXIT(c, JERR_INPUT_EMPTY);
            for (int i = 0; i < components; i++) {
                if (direct[i]) continue;
                int fx = factorX[i], fy = factorY[i], outWidth = planeWidth[i] / fx;
                for (int r = 0; r < groupRows[i]; r += fy) {
                    int y = group * groupRows[i] + r;
                    if (y >= planeHeight[i]) break;
                    uint8_t *out = planes[i] + (size_t)(y / fy) * strides[i];
                    const JSAMPLE *a = groups[i][r], *b = groups[i][r + fy - 1];
                    if (fx == 1 && fy == 1) {
                        memcpy(out, a, (size_t)outWidth);
                    } else if (fx == 2 && fy == 2) {
                        for (int x = 0; x < outWidth; x++)
                            out[x] = (uint8_t)((a[2 * x] + a[2 * x + 1] + b[2 * x] + b[2 * x + 1] + 2) >> 2);
                    } else if (fx == 2) {
                        for (int x = 0; x < outWidth; x++) out[x] = (uint8_t)((a[2 * x] + a[2 * x + 1] + 1) >> 1);
                    } else {
                        for (int x = 0; x < outWidth; x++) out[x] = (uint8_t)((a[x] + b[x] + 1) >> 1);
                    }
                }
            }
        }
    }
    jpeg_finish_decompress(c);
    return 0;
}
