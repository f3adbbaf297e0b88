// libxml2's ICU converter calls, forwarded to the ICU the Swift runtime
// already links.
//
// The release build links libxml2 statically (Makefile, STATIC_LIBS): a
// dynamically linked libxml2.so brings libicuuc, libicudata, liblzma, libz
// and libstdc++ into every start of `coffer`, about 1 ms of the loader's
// time per run (docs/benchmarks-cli.md, "Start-up"). libxml2.a calls seven
// functions of ICU's versioned C API (`ucnv_open_72` and so on, for
// encodings iconv does not handle). Linking Debian's libicuuc.a and
// libicudata.a for them would add a second 30 MB copy of ICU's data to the
// binary: Foundation already links ICU (FoundationICU, every C symbol
// prefixed `swift_`). These definitions forward those seven calls to it.
// ICU's converter C API is stable across versions, and every object that
// crosses here (the converter, the callback arguments) is made and read by
// the same copy of ICU.
//
// The risk, stated: `swift_ucnv_*` are FoundationICU's own names, not a
// published interface. A toolchain that renames or hides them fails the
// release link (loudly, at build time); `make release-check` (CI) covers the
// forwarders at run time through an SCSU-encoded file, which glibc's iconv
// cannot decode and libxml2 hands to ICU.
//
// Compiled only when scripts/static-libs.sh found libxml2.a: it passes
// COFFER_STATIC_LIBXML2 and COFFER_ICU_SUFFIX, the suffix libxml2.a's own
// undefined symbols carry (`_72` on Debian 12), so no ICU header is needed
// and the names cannot drift from what libxml2.a calls. A debug build links
// libxml2.so with its own ICU and compiles nothing here. The definitions
// are hidden: the static link resolves libxml2.a's calls to them, and no
// shared library can bind to them at run time.
#include "CXMLICU.h"

#if defined(COFFER_STATIC_LIBXML2) && defined(COFFER_ICU_SUFFIX)
#include <stdint.h>

#define COFFER_CAT2(a, b) a##b
#define COFFER_CAT(a, b) COFFER_CAT2(a, b)
#define ICU(name) COFFER_CAT(name, COFFER_ICU_SUFFIX)
#define HIDDEN __attribute__((visibility("hidden")))

// ICU's C types, as unicode/utypes.h and unicode/ucnv_err.h declare them:
// the converter and the callback arguments are only passed through.
typedef struct UConverter UConverter;
typedef struct UConverterToUnicodeArgs UConverterToUnicodeArgs;
typedef struct UConverterFromUnicodeArgs UConverterFromUnicodeArgs;
typedef int UErrorCode;                 // an enum
typedef int UConverterCallbackReason;   // an enum
typedef int8_t UBool;
typedef uint16_t UChar;
typedef int32_t UChar32;
typedef void (*UConverterToUCallback)(
    const void *context, UConverterToUnicodeArgs *args, const char *codeUnits, int32_t length,
    UConverterCallbackReason reason, UErrorCode *err);
typedef void (*UConverterFromUCallback)(
    const void *context, UConverterFromUnicodeArgs *args, const UChar *codeUnits, int32_t length,
    UChar32 codePoint, UConverterCallbackReason reason, UErrorCode *err);

// FoundationICU's names for the same functions.
extern UConverter *swift_ucnv_open(const char *converterName, UErrorCode *err);
extern void swift_ucnv_close(UConverter *converter);
extern void swift_ucnv_convertEx(
    UConverter *targetCnv, UConverter *sourceCnv, char **target, const char *targetLimit,
    const char **source, const char *sourceLimit, UChar *pivotStart, UChar **pivotSource,
    UChar **pivotTarget, const UChar *pivotLimit, UBool reset, UBool flush, UErrorCode *pErrorCode);
extern void swift_ucnv_setToUCallBack(
    UConverter *converter, UConverterToUCallback newAction, const void *newContext,
    UConverterToUCallback *oldAction, const void **oldContext, UErrorCode *err);
extern void swift_ucnv_setFromUCallBack(
    UConverter *converter, UConverterFromUCallback newAction, const void *newContext,
    UConverterFromUCallback *oldAction, const void **oldContext, UErrorCode *err);
extern void swift_UCNV_TO_U_CALLBACK_STOP(
    const void *context, UConverterToUnicodeArgs *toUArgs, const char *codeUnits, int32_t length,
    UConverterCallbackReason reason, UErrorCode *err);
extern void swift_UCNV_FROM_U_CALLBACK_STOP(
    const void *context, UConverterFromUnicodeArgs *fromUArgs, const UChar *codeUnits, int32_t length,
    UChar32 codePoint, UConverterCallbackReason reason, UErrorCode *err);

HIDDEN UConverter *ICU(ucnv_open)(const char *converterName, UErrorCode *err) {
    return swift_ucnv_open(converterName, err);
}

HIDDEN void ICU(ucnv_close)(UConverter *converter) {
    swift_ucnv_close(converter);
}

HIDDEN void ICU(ucnv_convertEx)(
    UConverter *targetCnv, UConverter *sourceCnv, char **target, const char *targetLimit,
    const char **source, const char *sourceLimit, UChar *pivotStart, UChar **pivotSource,
    UChar **pivotTarget, const UChar *pivotLimit, UBool reset, UBool flush, UErrorCode *pErrorCode) {
    swift_ucnv_convertEx(targetCnv, sourceCnv, target, targetLimit, source, sourceLimit, pivotStart,
                         pivotSource, pivotTarget, pivotLimit, reset, flush, pErrorCode);
}

HIDDEN void ICU(ucnv_setToUCallBack)(
    UConverter *converter, UConverterToUCallback newAction, const void *newContext,
    UConverterToUCallback *oldAction, const void **oldContext, UErrorCode *err) {
    swift_ucnv_setToUCallBack(converter, newAction, newContext, oldAction, oldContext, err);
}

HIDDEN void ICU(ucnv_setFromUCallBack)(
    UConverter *converter, UConverterFromUCallback newAction, const void *newContext,
    UConverterFromUCallback *oldAction, const void **oldContext, UErrorCode *err) {
    swift_ucnv_setFromUCallBack(converter, newAction, newContext, oldAction, oldContext, err);
}

HIDDEN void ICU(UCNV_TO_U_CALLBACK_STOP)(
    const void *context, UConverterToUnicodeArgs *toUArgs, const char *codeUnits, int32_t length,
    UConverterCallbackReason reason, UErrorCode *err) {
    swift_UCNV_TO_U_CALLBACK_STOP(context, toUArgs, codeUnits, length, reason, err);
}

HIDDEN void ICU(UCNV_FROM_U_CALLBACK_STOP)(
    const void *context, UConverterFromUnicodeArgs *fromUArgs, const UChar *codeUnits, int32_t length,
    UChar32 codePoint, UConverterCallbackReason reason, UErrorCode *err) {
    swift_UCNV_FROM_U_CALLBACK_STOP(context, fromUArgs, codeUnits, length, codePoint, reason, err);
}
#endif
