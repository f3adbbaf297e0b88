// Nothing to import: this target only adds link-time definitions
// (see xml_icu.c). The header exists because a C target needs one.
#pragma once
