// swift-tools-version: 6.1
//
// Coffer: a passphrase-unlocked credential vault for Linux with file-based
// sync. docs/architecture.md draws these targets and what each may import;
// scripts/check-layers.sh (run by `make test`) fails when an import crosses
// a layer the wrong way.

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

let package = Package(
    name: "Coffer",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "CofferKit", targets: ["CofferKit"]),
        .executable(name: "coffer", targets: ["coffer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", exact: "2.0.1"),
        // HMAC-SHA-1 for TOTP and SHA-1 for Have I Been Pwned look-ups
        // (libsodium has no SHA-1), ECDSA and RSA for SSH keys (libsodium
        // has Ed25519 only); CofferCrypto only.
        .package(url: "https://github.com/apple/swift-crypto", exact: "3.12.3"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", exact: "0.9.20"),
        // `make docs`: DocC for CofferKit (a plugin; nothing links it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
    ],
    targets: [
        // System C libraries. No pkgConfig: its `-L/usr/lib/<arch>` would
        // come first in the link's search path and hide the release build's
        // static libraries (Makefile, STATIC_LIBS); the headers are in
        // /usr/include.
        .systemLibrary(name: "CSodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CArgon2", providers: [.apt(["libargon2-dev"])]),
        .systemLibrary(name: "CCofferSys"),
        // GMP's constant-time modular exponentiation for the Secret
        // Service's Diffie-Hellman (CofferCrypto only; docs/secret-service.md).
        .systemLibrary(name: "CGMP", providers: [.apt(["libgmp-dev"])]),
        // sd-bus (libsystemd, Debian: libsystemd-dev), for `coffer
        // secret-service` only: loaded with dlopen when the service starts,
        // not linked, so other commands never map it (Sources/CSystemd).
        .target(name: "CSystemd", linkerSettings: [.linkedLibrary("dl")]),
        // libxml2's ICU calls forwarded to Foundation's ICU when the release
        // build links libxml2 statically (Sources/CXMLICU/xml_icu.c).
        .target(name: "CXMLICU"),

        // Every call into libsodium and libargon2: keys in guarded memory,
        // AEAD, KDFs, secretstream, padding, random bytes; HMAC and SHA-1
        // from swift-crypto, and from its _CryptoExtras what libsodium
        // lacks: AES-256-CBC (KeePass's KDBX), ECDSA and RSA (SSH keys).
        // Nothing else.
        .target(
            name: "CofferCrypto",
            dependencies: [
                "CSodium", "CArgon2", "CGMP", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // The POSIX layer: child processes, private and atomic files,
        // terminal and passphrase input, process hardening.
        .target(
            name: "CofferSystem",
            dependencies: ["CofferCrypto", "CCofferSys"],
            swiftSettings: strict),
        // Version vectors, register merge, bundle encoding. Pure: no I/O of
        // its own beyond the streams it is handed.
        .target(
            name: "CofferSync",
            dependencies: ["CofferCrypto"],
            swiftSettings: strict),
        // The vault file: SQLite schema, migrations and every SQL query
        // (GRDB over the system SQLite), rows read through SafeRow.
        .target(
            name: "CofferStore",
            dependencies: [.product(name: "GRDB", package: "GRDB.swift"), "CofferSync"],
            swiftSettings: strict),
        // The public library, one folder per concern (docs/architecture.md).
        .target(
            name: "CofferKit",
            dependencies: [
                // No GRDB: CofferKit hands CofferStore a StoreConnection and
                // runs no SQL itself (scripts/check-layers.sh).
                "CofferCrypto", "CofferSystem", "CofferSync", "CofferStore",
            ],
            // Word lists compiled into the library, so an installed binary
            // needs no files beside it: the EFF long wordlist for `coffer
            // generate --words`, and the audit's common passwords and words.
            exclude: ["Resources/README.md", "Audit/Resources/LICENSE-zxcvbn.txt"],
            resources: [
                .embedInCode("Resources/eff_large_wordlist.txt"),
                .embedInCode("Audit/Resources/common-words.txt"),
            ],
            swiftSettings: strict + [.enableUpcomingFeature("MemberImportVisibility")]),
        // Other tools' formats (pass, KeePass XML/kdbx, Bitwarden, 1PUX,
        // CSV, dotenv, Coffer JSON) read into and written from CofferKit's
        // item model; their libraries stay here (docs/import-export.md).
        .target(
            name: "CofferInterop",
            dependencies: [
                "CofferKit", "CofferSystem", "CofferCrypto", "CXMLICU",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            swiftSettings: strict),
        // The Secret Service (org.freedesktop.secrets) on the session bus
        // through sd-bus: the D-Bus objects over CofferKit's SecretService
        // component (docs/secret-service.md).
        .target(
            name: "CofferSecretService",
            dependencies: ["CofferKit", "CofferSystem", "CofferCrypto", "CSystemd"],
            swiftSettings: strict),
        // The command-line tool: argument parsing and output only.
        .executableTarget(
            name: "coffer",
            dependencies: [
                "CofferKit", "CofferSystem", "CofferInterop", "CofferSecretService",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),

        // Benchmarks only: bulk generation of items through package-internal
        // write paths, and the `coffer-bench` tool the bench scripts call.
        .target(
            name: "CofferBenchSupport",
            dependencies: ["CofferKit", "CofferStore", "CofferSync", "CofferCrypto", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict),
        .executableTarget(
            name: "coffer-bench",
            dependencies: [
                "CofferBenchSupport", "CofferKit", "CofferSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),

        // Example: an application keeping its credentials in Coffer (docs/cofferkit.md).
        .executableTarget(
            name: "coffer-example", dependencies: ["CofferKit"], path: "Examples/KeychainApp",
            swiftSettings: strict),

        // What the test targets share (Tests/CofferTestSupport): the one
        // process-spawning harness, the fast KDF settings, temporary folders
        // and vaults that remove themselves. CofferKit's public API only
        // (scripts/check-layers.sh), so the API tests may use it too.
        .target(
            name: "CofferTestSupport",
            dependencies: ["CofferKit"],
            path: "Tests/CofferTestSupport",
            swiftSettings: strict),

        .testTarget(
            name: "CofferCryptoTests",
            dependencies: ["CofferCrypto"],
            swiftSettings: strict),
        .testTarget(
            name: "CofferSystemTests",
            dependencies: ["CofferSystem", "CofferCrypto", "CofferTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "CofferSyncTests",
            dependencies: [
                "CofferSync", "CofferCrypto",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "CofferKitTests",
            dependencies: [
                "CofferKit", "CofferStore", "CofferSync", "CofferCrypto", "CofferSystem", "CofferBenchSupport", "CofferTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strict),
        // CofferStore on its own: opening files, SafeRow, the migrations.
        .testTarget(
            name: "CofferStoreTests",
            dependencies: [
                "CofferStore", "CofferSync", "CofferCrypto", "CofferTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict),
        // CofferKit's public API as an application sees it: this target
        // depends on CofferKit alone (and the test support, which uses only
        // CofferKit's public API), so a type the API needs but does not
        // re-export fails the build.
        .testTarget(
            name: "CofferKitAPITests",
            dependencies: ["CofferKit", "CofferTestSupport"],
            swiftSettings: strict + [.enableUpcomingFeature("MemberImportVisibility")]),
        .testTarget(
            name: "CofferInteropTests",
            dependencies: ["CofferInterop", "CofferKit", "CofferCrypto"],
            swiftSettings: strict),
        .testTarget(
            name: "CofferCLITests",
            dependencies: ["coffer", "CofferTestSupport"],
            swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
