// Internal: what every decoder shares about the image it fills.
#ifndef IMGCACHE_DECODED_IMAGE_H
#define IMGCACHE_DECODED_IMAGE_H

#include "imgcache_shims.h"

/// Allocates a still image's pixels after checking the limit; 0, or -1 with a message.
int ic_allocate_still(ic_decoded_image *out, uint32_t width, uint32_t height, uint64_t max_pixels,
                      char *error, size_t error_size);

/// Keeps a copy of an embedded ICC profile with a decoded image (best effort:
/// without memory for it, the image is only shown in its stored colours).
void ic_attach_icc(ic_decoded_image *out, const uint8_t *icc, size_t size);

/// The whole factor (at least 1) by which `width` x `height` may shrink and keep at least
/// `min_width` x `min_height` (0: any).
uint32_t ic_shrink_factor(uint32_t width, uint32_t height, uint32_t min_width, uint32_t min_height);

/// Shrinks RGBA rows by a whole factor as a decoder hands them over (each output pixel the
/// alpha-weighted mean of its factor x factor block), into `out`, allocated at the shrunk size.
typedef struct ic_row_shrinker ic_row_shrinker;
ic_row_shrinker *ic_row_shrinker_new(uint32_t width, uint32_t height, uint32_t factor, ic_decoded_image *out,
                                     char *error, size_t error_size);
/// Where the decoder writes the next row (width x 4 bytes).
uint8_t *ic_row_shrinker_row(ic_row_shrinker *shrinker);
/// Takes the row just written.
void ic_row_shrinker_add(ic_row_shrinker *shrinker);
void ic_row_shrinker_free(ic_row_shrinker *shrinker);

#endif
