/* Image kernels a DataLoader runs once per sample (image_kernels.h). */
#include "image_kernels.h"

#include "fast_math.h" /* FM_CLONES: the normalization loop built per instruction set */

#include <string.h>

/* The module is built at -O2, whose cost model (GCC) leaves the normalization loop scalar: vectorized. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

void ember_reverse_axis(const void *src, void *dst, int64_t outer, int64_t n, int64_t inner_bytes) {
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (int64_t o = 0; o < outer; o++) {
        const unsigned char *row = s + o * n * inner_bytes;
        unsigned char *out = d + o * n * inner_bytes;
        if (inner_bytes >= 16) {
            for (int64_t j = 0; j < n; j++)
                memcpy(out + j * inner_bytes, row + (n - 1 - j) * inner_bytes, (size_t)inner_bytes);
            continue;
        }
        /* a few bytes per element (an HWC pixel): byte moves beat a memcpy call each, with the
         * common sizes spelled out so that each element is moved without an inner loop */
        if (inner_bytes == 3 && n >= 2) {
            /* 4 bytes moved per pixel: the fourth lands on the next pixel's first byte, written
             * next; the row's first and last pixels by bytes (no read or write leaves the row) */
            memcpy(out, row + (n - 1) * 3, 3);
            for (int64_t j = 1; j < n - 1; j++) {
                uint32_t pixel;
                memcpy(&pixel, row + (n - 1 - j) * 3, 4);
                memcpy(out + 3 * j, &pixel, 4);
            }
            memcpy(out + (n - 1) * 3, row, 3);
            continue;
        }
        if (inner_bytes == 1) {
            for (int64_t j = 0; j < n; j++) out[j] = row[n - 1 - j];
            continue;
        }
        for (int64_t j = 0; j < n; j++) {
            const unsigned char *from = row + (n - 1 - j) * inner_bytes;
            unsigned char *to = out + j * inner_bytes;
            for (int64_t k = 0; k < inner_bytes; k++) to[k] = from[k];
        }
    }
}

/* v / 255.0f for every byte value v, folded by the compiler (correctly rounded, as the division
 * at run time is): a table lookup per pixel instead of a division, the same bits. */
#define UNIT(v) ((float)(v) / 255.0f)
#define UNIT4(v) UNIT(v), UNIT((v) + 1), UNIT((v) + 2), UNIT((v) + 3)
#define UNIT16(v) UNIT4(v), UNIT4((v) + 4), UNIT4((v) + 8), UNIT4((v) + 12)
#define UNIT64(v) UNIT16(v), UNIT16((v) + 16), UNIT16((v) + 32), UNIT16((v) + 48)
static const float unit_of_byte[256] = {UNIT64(0), UNIT64(64), UNIT64(128), UNIT64(192)};

void ember_u8_hwc_to_chw_unit(const void *src, void *dst, int64_t batch, int64_t pixels, int64_t channels) {
    const uint8_t *s = src;
    float *d = dst;
    for (int64_t b = 0; b < batch; b++) {
        const uint8_t *image = s + b * pixels * channels;
        float *out = d + b * pixels * channels;
        if (channels == 3) { /* RGB: the source read once, in order */
            float *r = out, *g = out + pixels, *bl = out + 2 * pixels;
            for (int64_t p = 0; p < pixels; p++) {
                r[p] = unit_of_byte[image[3 * p]];
                g[p] = unit_of_byte[image[3 * p + 1]];
                bl[p] = unit_of_byte[image[3 * p + 2]];
            }
            continue;
        }
        for (int64_t c = 0; c < channels; c++) {
            float *plane = out + c * pixels;
            for (int64_t p = 0; p < pixels; p++) plane[p] = unit_of_byte[image[p * channels + c]];
        }
    }
}

/* One loop per channel plane: a subtraction then a division per element (no reciprocal, no
 * contraction: the module is ISO C), so every instruction set gives numpy's bits. */
FM_CLONES
void ember_normalize_f32(const float *src, float *dst, int64_t batch, int64_t channels, int64_t plane,
                         const float *mean, const float *std) {
    for (int64_t b = 0; b < batch; b++)
        for (int64_t c = 0; c < channels; c++) {
            const float *x = src + (b * channels + c) * plane;
            float *y = dst + (b * channels + c) * plane;
            const float m = mean[c], s = std[c];
            for (int64_t p = 0; p < plane; p++) y[p] = (x[p] - m) / s;
        }
}
