// swift-tools-version: 6.1
//
// Coffer: a passphrase-unlocked credential vault for Linux with file-based
// sync. See docs/architecture.md for why the targets are split this way.

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
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
    ],
    targets: [
        // System C libraries. Only CofferCrypto imports these.
        .systemLibrary(
            name: "CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(
            name: "CArgon2", pkgConfig: "libargon2",
            providers: [.apt(["libargon2-dev"])]),
        .systemLibrary(name: "CCofferSys"),

        // Keys, AEAD, KDF, secretstream, guarded memory, passphrase input.
        .target(
            name: "CofferCrypto",
            dependencies: ["CSodium", "CArgon2", "CCofferSys"],
            swiftSettings: strict),
        // Version vectors, register merge, bundle encoding. No I/O of its own
        // beyond the streams it is handed.
        .target(
            name: "CofferSync",
            dependencies: ["CofferCrypto"],
            swiftSettings: strict),
        // SQLite schema, migrations and queries (GRDB over system SQLite).
        .target(
            name: "CofferStore",
            dependencies: [.product(name: "GRDB", package: "GRDB.swift"), "CofferSync"],
            swiftSettings: strict),
        // The public library.
        .target(
            name: "CofferKit",
            dependencies: ["CofferCrypto", "CofferSync", "CofferStore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict),
        // The command-line tool: argument parsing and output only.
        .executableTarget(
            name: "coffer",
            dependencies: [
                "CofferKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
        // Example: an application reading its API key through CofferKit.
        .executableTarget(
            name: "coffer-example", dependencies: ["CofferKit"], path: "Examples/ReadAPIKey",
            swiftSettings: strict),

        .testTarget(
            name: "CofferCryptoTests",
            dependencies: ["CofferCrypto"],
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
            dependencies: ["CofferKit", "CofferStore", "CofferSync", "CofferCrypto", .product(name: "GRDB", package: "GRDB.swift")],
            resources: [.copy("Fixtures")],
            swiftSettings: strict),
        .testTarget(
            name: "CofferCLITests",
            dependencies: ["coffer"],
            swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
