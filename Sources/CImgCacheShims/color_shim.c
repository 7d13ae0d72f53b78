// Colour: lcms2 turns decoded pixels described by an embedded ICC profile (or
// by an AVIF/HEIF colour description, or CMYK ink) into sRGB, which is what a
// thumbnail or a conversion is written in. Loaded on first use, like every
// other library; a decoder that finds no profile never loads it.
#include "imgcache_shims.h"
#include "loader.h"

#include <lcms2.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IC_LCMS_FUNCTIONS(X)                                                                     \
    X(cmsHPROFILE, cmsOpenProfileFromMem, (const void *, cmsUInt32Number))                       \
    X(cmsHPROFILE, cmsCreate_sRGBProfile, (void))                                                \
    X(cmsBool, cmsCloseProfile, (cmsHPROFILE))                                                   \
    X(cmsColorSpaceSignature, cmsGetColorSpace, (cmsHPROFILE))                                   \
    X(cmsHTRANSFORM, cmsCreateTransform,                                                         \
      (cmsHPROFILE, cmsUInt32Number, cmsHPROFILE, cmsUInt32Number, cmsUInt32Number, cmsUInt32Number)) \
    X(void, cmsDoTransform, (cmsHTRANSFORM, const void *, void *, cmsUInt32Number))              \
    X(void, cmsDeleteTransform, (cmsHTRANSFORM))                                                 \
    X(cmsHPROFILE, cmsCreateRGBProfile, (const cmsCIExyY *, const cmsCIExyYTRIPLE *, cmsToneCurve *const[3])) \
    X(cmsToneCurve *, cmsBuildParametricToneCurve, (cmsContext, cmsInt32Number, const cmsFloat64Number[])) \
    X(void, cmsFreeToneCurve, (cmsToneCurve *))                                                  \
    X(void, cmsSetLogErrorHandler, (cmsLogErrorHandlerFunction))                                 \
    X(void *, cmsReadTag, (cmsHPROFILE, cmsTagSignature))                                        \
    X(cmsBool, cmsIsMatrixShaper, (cmsHPROFILE))                                                 \
    X(cmsFloat32Number, cmsEvalToneCurveFloat, (const cmsToneCurve *, cmsFloat32Number))         \
    X(int, cmsGetEncodedCMMversion, (void))

static void lcms_quiet(cmsContext context, cmsUInt32Number code, const char *text) {
    (void)context;
    (void)code;
    (void)text;
}

IC_LCMS_FUNCTIONS(IC_DECLARE_POINTER)
IC_LIBRARY_STATE(lcms)
static void lcms_load_once(void) {
    IC_OPEN_AND_RESOLVE(lcms, "liblcms2-2", IC_LCMS_FUNCTIONS, "liblcms2.so.2", "liblcms2.so")
    // A profile lcms2 cannot read is no colour at all: said by the caller, not printed.
    p_cmsSetLogErrorHandler(lcms_quiet);
    lcms_loaded = 1;
}
IC_LIBRARY_LOADER(lcms)

int ic_lcms_version(void) {
    char error[64];
    if (ic_lcms_load(error, sizeof error) != 0) return 0;
    return p_cmsGetEncodedCMMversion();
}

/// Applies `transform` to `count` pixels in place, in bounded slices (lcms2
/// takes a 32-bit count).
static void transform_in_place(cmsHTRANSFORM transform, uint8_t *pixels, uint64_t count, size_t bytes_in, size_t bytes_out,
                               uint8_t *scratch, size_t scratch_pixels) {
    for (uint64_t done = 0; done < count;) {
        uint64_t slice = count - done < scratch_pixels ? count - done : scratch_pixels;
        p_cmsDoTransform(transform, pixels + done * bytes_in, scratch, (cmsUInt32Number)slice);
        memcpy(pixels + done * bytes_out, scratch, slice * bytes_out);
        done += slice;
    }
}

/// Whether `profile` is sRGB in all but name: the same colorants and white
/// (as lcms2 reads them, adapted to D50) and the same tone curves, within what
/// 8-bit samples can show. Most web images that carry a profile carry this
/// one; they are left as they are instead of going through a transform.
static int profile_is_srgb(cmsHPROFILE profile, cmsHPROFILE srgb) {
    if (p_cmsGetColorSpace(profile) != cmsSigRgbData || !p_cmsIsMatrixShaper(profile)) return 0;
    const cmsTagSignature colorants[] = {cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag};
    for (int index = 0; index < 3; index++) {
        const cmsCIEXYZ *mine = p_cmsReadTag(profile, colorants[index]), *theirs = p_cmsReadTag(srgb, colorants[index]);
        if (mine == NULL || theirs == NULL) return 0;
        if (fabs(mine->X - theirs->X) > 0.002 || fabs(mine->Y - theirs->Y) > 0.002 || fabs(mine->Z - theirs->Z) > 0.002) return 0;
    }
    const cmsTagSignature curves[] = {cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag};
    for (int index = 0; index < 3; index++) {
        const cmsToneCurve *mine = p_cmsReadTag(profile, curves[index]), *theirs = p_cmsReadTag(srgb, curves[index]);
        if (mine == NULL || theirs == NULL) return 0;
        for (int step = 0; step <= 32; step++) {
            float x = step / 32.0f;
            if (fabsf(p_cmsEvalToneCurveFloat(mine, x) - p_cmsEvalToneCurveFloat(theirs, x)) > 0.5f / 255) return 0;
        }
    }
    return 1;
}

/// Turns `count` RGBA8 pixels described by `profile` into sRGB, alpha kept.
/// A gray profile reads the red channel as gray. Returns 0; 1 when nothing
/// was done (the profile unreadable, or of no colour space this handles);
/// -1 with a message when lcms2 cannot be loaded.
static int rgba_to_srgb(cmsHPROFILE source, uint8_t *rgba, uint64_t count, char *error, size_t error_size) {
    (void)error;
    (void)error_size;
    cmsHPROFILE srgb = p_cmsCreate_sRGBProfile();
    if (srgb == NULL) return 1;
    cmsColorSpaceSignature space = p_cmsGetColorSpace(source);
    int result = 1;
    if (profile_is_srgb(source, srgb)) {
        p_cmsCloseProfile(srgb);
        return 0;
    }
    enum { slice = 4096 };
    uint8_t *scratch = malloc(slice * 4);
    if (scratch == NULL) {
        p_cmsCloseProfile(srgb);
        return 1;
    }
    if (space == cmsSigRgbData) {
        cmsHTRANSFORM transform = p_cmsCreateTransform(source, TYPE_RGBA_8, srgb, TYPE_RGBA_8, INTENT_PERCEPTUAL, cmsFLAGS_COPY_ALPHA);
        if (transform != NULL) {
            transform_in_place(transform, rgba, count, 4, 4, scratch, slice);
            p_cmsDeleteTransform(transform);
            result = 0;
        }
    } else if (space == cmsSigGrayData) {
        // Gray with alpha, taken from the expanded RGBA (red is the gray), transformed back to RGBA.
        cmsHTRANSFORM transform = p_cmsCreateTransform(source, TYPE_GRAYA_8, srgb, TYPE_RGBA_8, INTENT_PERCEPTUAL, cmsFLAGS_COPY_ALPHA);
        uint8_t *gray = malloc(slice * 2);
        if (transform != NULL && gray != NULL) {
            for (uint64_t done = 0; done < count;) {
                uint64_t n = count - done < slice ? count - done : slice;
                for (uint64_t i = 0; i < n; i++) {
                    gray[i * 2] = rgba[(done + i) * 4];
                    gray[i * 2 + 1] = rgba[(done + i) * 4 + 3];
                }
                p_cmsDoTransform(transform, gray, rgba + done * 4, (cmsUInt32Number)n);
                done += n;
            }
            result = 0;
        }
        if (transform != NULL) p_cmsDeleteTransform(transform);
        free(gray);
    }
    free(scratch);
    p_cmsCloseProfile(srgb);
    return result;
}

int ic_color_icc_to_srgb(uint8_t *rgba, uint64_t count, const uint8_t *icc, size_t icc_size,
                         char *error, size_t error_size) {
    if (icc == NULL || icc_size < 128 || icc_size > UINT32_MAX) return 1;
    if (ic_lcms_load(error, error_size) != 0) return -1;
    cmsHPROFILE source = p_cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_size);
    if (source == NULL) return 1;
    int result = rgba_to_srgb(source, rgba, count, error, error_size);
    p_cmsCloseProfile(source);
    return result;
}

/// The chromaticities of the colour primaries an nclx box names (ITU-T H.273).
static int primaries_of(int code, cmsCIExyYTRIPLE *out, cmsCIExyY *white) {
    white->x = 0.3127;
    white->y = 0.3290;
    white->Y = 1.0;
    switch (code) {
    case 9: // BT.2020, BT.2100
        *out = (cmsCIExyYTRIPLE){{0.708, 0.292, 1.0}, {0.170, 0.797, 1.0}, {0.131, 0.046, 1.0}};
        return 0;
    case 12: // SMPTE EG 432-1: Display P3
        *out = (cmsCIExyYTRIPLE){{0.680, 0.320, 1.0}, {0.265, 0.690, 1.0}, {0.150, 0.060, 1.0}};
        return 0;
    case 11: // SMPTE RP 431-2: DCI-P3, its own white
        *out = (cmsCIExyYTRIPLE){{0.680, 0.320, 1.0}, {0.265, 0.690, 1.0}, {0.150, 0.060, 1.0}};
        white->x = 0.314;
        white->y = 0.351;
        return 0;
    case 5: // BT.601 625
        *out = (cmsCIExyYTRIPLE){{0.64, 0.33, 1.0}, {0.29, 0.60, 1.0}, {0.15, 0.06, 1.0}};
        return 0;
    case 6: // BT.601 525
    case 7:
        *out = (cmsCIExyYTRIPLE){{0.630, 0.340, 1.0}, {0.310, 0.595, 1.0}, {0.155, 0.070, 1.0}};
        return 0;
    default:
        return -1;
    }
}

int ic_color_primaries_to_srgb(uint8_t *rgba, uint64_t count, int primaries, int transfer, char *error, size_t error_size) {
    // sRGB's own primaries (BT.709) or none said: nothing to do.
    if (primaries == 1 || primaries == 2 || primaries == 0) return 1;
    cmsCIExyYTRIPLE triple;
    cmsCIExyY white;
    if (primaries_of(primaries, &triple, &white) != 0) return 1;
    if (ic_lcms_load(error, error_size) != 0) return -1;
    // The transfer: sRGB's curve for sRGB (13) and unspecified; a 2.2 power otherwise
    // (BT.709's curve is near it). PQ and HLG (HDR) are left as they are.
    if (transfer == 16 || transfer == 18) return 1;
    cmsToneCurve *curve;
    if (transfer == 13 || transfer == 2 || transfer == 0) {
        cmsFloat64Number srgb[5] = {2.4, 1.0 / 1.055, 0.055 / 1.055, 1.0 / 12.92, 0.04045};
        curve = p_cmsBuildParametricToneCurve(NULL, 4, srgb);
    } else if (transfer == 8) {
        cmsFloat64Number linear[1] = {1.0};
        curve = p_cmsBuildParametricToneCurve(NULL, 1, linear);
    } else {
        cmsFloat64Number gamma[1] = {2.2};
        curve = p_cmsBuildParametricToneCurve(NULL, 1, gamma);
    }
    if (curve == NULL) return 1;
    cmsToneCurve *curves[3] = {curve, curve, curve};
    cmsHPROFILE source = p_cmsCreateRGBProfile(&white, &triple, curves);
    p_cmsFreeToneCurve(curve);
    if (source == NULL) return 1;
    int result = rgba_to_srgb(source, rgba, count, error, error_size);
    p_cmsCloseProfile(source);
    return result;
}

int ic_color_cmyk_to_srgb(const uint8_t *cmyk, uint8_t *rgba, uint64_t count, int inverted, const uint8_t *icc,
                          size_t icc_size, char *error, size_t error_size) {
    if (icc == NULL || icc_size < 128 || icc_size > UINT32_MAX) return 1;
    if (ic_lcms_load(error, error_size) != 0) return -1;
    cmsHPROFILE source = p_cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_size);
    if (source == NULL) return 1;
    int result = 1;
    if (p_cmsGetColorSpace(source) == cmsSigCmykData) {
        cmsHPROFILE srgb = p_cmsCreate_sRGBProfile();
        // Adobe's CMYK JPEGs store ink inverted (0 is full ink): lcms2's reversed flavour reads them.
        cmsHTRANSFORM transform = srgb == NULL ? NULL
            : p_cmsCreateTransform(source, inverted ? TYPE_CMYK_8_REV : TYPE_CMYK_8, srgb, TYPE_RGBA_8, INTENT_PERCEPTUAL, 0);
        if (transform != NULL) {
            for (uint64_t done = 0; done < count;) {
                uint64_t n = count - done < 65536 ? count - done : 65536;
                p_cmsDoTransform(transform, cmyk + done * 4, rgba + done * 4, (cmsUInt32Number)n);
                for (uint64_t i = 0; i < n; i++) rgba[(done + i) * 4 + 3] = 255;
                done += n;
            }
            p_cmsDeleteTransform(transform);
            result = 0;
        }
        if (srgb != NULL) p_cmsCloseProfile(srgb);
    }
    p_cmsCloseProfile(source);
    return result;
}
