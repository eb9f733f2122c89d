/* image_kernels.h against plain reference loops, on heap buffers of exactly the sizes given (run
 * under ASan + UBSan by `make memcheck`: an access past either buffer fails the run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_kernels.h"

static int check_reverse(int64_t outer, int64_t n, int64_t inner) {
    size_t size = (size_t)(outer * n * inner);
    unsigned char *src = malloc(size ? size : 1), *dst = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++) src[i] = (unsigned char)(i * 31 + 7);
    ember_reverse_axis(src, dst, outer, n, inner);
    int bad = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n; j++)
            bad |= memcmp(dst + (o * n + j) * inner, src + (o * n + n - 1 - j) * inner, (size_t)inner) != 0;
    free(src);
    free(dst);
    if (bad) fprintf(stderr, "reverse_axis wrong for (%ld, %ld, %ld)\n", (long)outer, (long)n, (long)inner);
    return bad;
}

static int check_to_chw(int64_t batch, int64_t pixels, int64_t channels) {
    size_t count = (size_t)(batch * pixels * channels);
    uint8_t *src = malloc(count);
    float *dst = malloc(count * sizeof *dst);
    for (size_t i = 0; i < count; i++) src[i] = (uint8_t)(i * 13 + 5);
    ember_u8_hwc_to_chw_unit(src, dst, batch, pixels, channels);
    int bad = 0;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t c = 0; c < channels; c++)
            for (int64_t p = 0; p < pixels; p++) {
                volatile float want = (float)src[(b * pixels + p) * channels + c] / 255.0f;
                bad |= dst[(b * channels + c) * pixels + p] != want;
            }
    free(src);
    free(dst);
    if (bad) fprintf(stderr, "u8_hwc_to_chw_unit wrong for (%ld, %ld, %ld)\n", (long)batch, (long)pixels,
                     (long)channels);
    return bad;
}

static int check_normalize(int64_t batch, int64_t channels, int64_t plane, int in_place) {
    size_t count = (size_t)(batch * channels * plane);
    float *src = malloc(count * sizeof *src), *dst = in_place ? src : malloc(count * sizeof *dst);
    float *want = malloc(count * sizeof *want);
    const float mean[4] = {0.4914f, 0.4822f, 0.4465f, 0.5f}, std[4] = {0.247f, 0.2435f, 0.2616f, 0.3f};
    for (size_t i = 0; i < count; i++) {
        src[i] = (float)((i * 37 + 11) % 256) / 255.0f;
        int64_t c = (int64_t)(i / (size_t)plane) % channels;
        volatile float centred = src[i] - mean[c];
        want[i] = centred / std[c];
    }
    ember_normalize_f32(src, dst, batch, channels, plane, mean, std);
    int bad = memcmp(dst, want, count * sizeof *want) != 0;
    free(src);
    if (!in_place) free(dst);
    free(want);
    if (bad) fprintf(stderr, "normalize_f32 wrong for (%ld, %ld, %ld)%s\n", (long)batch, (long)channels, (long)plane,
                     in_place ? " in place" : "");
    return bad;
}

int main(void) {
    int bad = 0;
    const int64_t inners[] = {1, 2, 3, 4, 8, 15, 16, 17, 40};
    for (size_t i = 0; i < sizeof inners / sizeof *inners; i++) {
        bad |= check_reverse(1, 32, inners[i]);
        bad |= check_reverse(5, 7, inners[i]);
        bad |= check_reverse(3, 1, inners[i]);
    }
    bad |= check_reverse(0, 4, 3);
    bad |= check_reverse(2, 2, 3);
    for (int64_t c = 1; c <= 4; c++) {
        bad |= check_to_chw(1, 1024, c);
        bad |= check_to_chw(3, 35, c);
    }
    for (int64_t c = 1; c <= 4; c++) {
        bad |= check_normalize(1, c, 1024, 0);
        bad |= check_normalize(3, c, 37, 0);
        bad |= check_normalize(2, c, 5, 1);
    }
    puts(bad ? "image kernels: FAILED" : "image kernels: ok");
    return bad;
}
