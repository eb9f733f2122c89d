/* Image kernels a DataLoader runs once per sample.
 *
 * numpy copies a flipped HWC uint8 image pixel by pixel through its general strided iterator (an
 * inner loop of 3 bytes: ~5 us for 32x32x3, more than the rest of the transforms together), and
 * ToTensor's transposing cast then its division by 255 are two passes, Normalize's subtraction
 * and division two more (each a numpy call of ~0.7 us on a 32x32 image).  Here each is one plain
 * loop.  The results are those of the numpy code they replace, bit for bit: a copy, the float32
 * division of each pixel value by 255, and the float32 subtraction then division of Normalize
 * (IEEE division, no reciprocal).
 */
#ifndef EMBER_IMAGE_KERNELS_H
#define EMBER_IMAGE_KERNELS_H

#include <stdint.h>

/* dst = src with its middle axis reversed, both C-contiguous (outer, n, inner_bytes) byte arrays
 * that do not overlap: dst[o][j] = src[o][n - 1 - j]. */
void ember_reverse_axis(const void *src, void *dst, int64_t outer, int64_t n, int64_t inner_bytes);

/* dst (batch, channels, pixels) float32 = src (batch, pixels, channels) uint8 / 255.0f, both
 * C-contiguous; pixels = height * width (ToTensor of HWC or NHWC images). */
void ember_u8_hwc_to_chw_unit(const void *src, void *dst, int64_t batch, int64_t pixels, int64_t channels);

/* dst (batch, channels, plane) = (src - mean[c]) / std[c] in float32, each C-contiguous; dst may be
 * src itself (Normalize of CHW or NCHW tensors, plane = height * width). */
void ember_normalize_f32(const float *src, float *dst, int64_t batch, int64_t channels, int64_t plane,
                         const float *mean, const float *std);

#endif
