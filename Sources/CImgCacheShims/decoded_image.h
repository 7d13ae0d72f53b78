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

#endif
