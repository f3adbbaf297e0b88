// GMP (Debian: libgmp-dev): mpz_powm_sec, the constant-time modular
// exponentiation of the Secret Service's 1024-bit Diffie-Hellman
// (Sources/CofferCrypto/SecretServiceDH.swift; docs/secret-service.md says
// why GMP). Nothing else of GMP is used.
#include <gmp.h>
