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
// ICU's C API is stable across versions, and every object that crosses
// here (the converter, the callback arguments) is made and read by the
// same copy of ICU.
//
// Compiled only when the release build asks (COFFER_STATIC_LIBXML2): a
// debug build links libxml2.so with its own ICU and needs nothing here.
#include "CXMLICU.h"

#ifdef COFFER_STATIC_LIBXML2
#include <unicode/ucnv.h>
#include <unicode/ucnv_err.h>

// FoundationICU's names for the same functions (its headers are not
// installed, so they are declared here with ICU's own prototypes).
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

// ICU's headers rename each of these to its versioned symbol
// (ucnv_open -> ucnv_open_72), the one libxml2.a was built against.
UConverter *ucnv_open(const char *converterName, UErrorCode *err) {
    return swift_ucnv_open(converterName, err);
}

void ucnv_close(UConverter *converter) {
    swift_ucnv_close(converter);
}

void ucnv_convertEx(
    UConverter *targetCnv, UConverter *sourceCnv, char **target, const char *targetLimit,
    const char **source, const char *sourceLimit, UChar *pivotStart, UChar **pivotSource,
    UChar **pivotTarget, const UChar *pivotLimit, UBool reset, UBool flush, UErrorCode *pErrorCode) {
    swift_ucnv_convertEx(targetCnv, sourceCnv, target, targetLimit, source, sourceLimit, pivotStart,
                         pivotSource, pivotTarget, pivotLimit, reset, flush, pErrorCode);
}

void ucnv_setToUCallBack(
    UConverter *converter, UConverterToUCallback newAction, const void *newContext,
    UConverterToUCallback *oldAction, const void **oldContext, UErrorCode *err) {
    swift_ucnv_setToUCallBack(converter, newAction, newContext, oldAction, oldContext, err);
}

void ucnv_setFromUCallBack(
    UConverter *converter, UConverterFromUCallback newAction, const void *newContext,
    UConverterFromUCallback *oldAction, const void **oldContext, UErrorCode *err) {
    swift_ucnv_setFromUCallBack(converter, newAction, newContext, oldAction, oldContext, err);
}

void UCNV_TO_U_CALLBACK_STOP(
    const void *context, UConverterToUnicodeArgs *toUArgs, const char *codeUnits, int32_t length,
    UConverterCallbackReason reason, UErrorCode *err) {
    swift_UCNV_TO_U_CALLBACK_STOP(context, toUArgs, codeUnits, length, reason, err);
}

void UCNV_FROM_U_CALLBACK_STOP(
    const void *context, UConverterFromUnicodeArgs *fromUArgs, const UChar *codeUnits, int32_t length,
    UChar32 codePoint, UConverterCallbackReason reason, UErrorCode *err) {
    swift_UCNV_FROM_U_CALLBACK_STOP(context, fromUArgs, codeUnits, length, codePoint, reason, err);
}
#endif
