/* Image kernels a DataLoader runs once per sample (image_kernels.h). */
#include "image_kernels.h"

#include <string.h>

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
        /* a few bytes per element (an HWC pixel): byte moves beat a memcpy call each */
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
