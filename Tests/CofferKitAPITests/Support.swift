// This target depends on the CofferKit product and imports nothing else of
// the package but the test support, which uses CofferKit's public API only
// and re-exports nothing (scripts/check-layers.sh checks both): every type
// a test names must reach it through `import CofferKit`, so a missing
// re-export fails the build. MemberImportVisibility (Package.swift) makes
// member access follow the same rule.
import CofferKit
import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A throw-away folder with a vault path in it.
final class Sandbox: @unchecked Sendable {
    let folder = TemporaryDirectory(prefix: "coffer-api")
    var root: URL { folder.url }
    static let passphrase = "correct horse battery staple"

    func path(_ name: String) -> String { root.appendingPathComponent(name).path }
    var vaultPath: String { path("vault.coffer") }

    /// A new vault at ``vaultPath``.
    func create() async throws(CofferError) -> Coffer {
        try await Coffer.create(at: vaultPath, passphrase: Self.passphrase, kdf: FastKDF.parameters)
    }

    /// A file holding the passphrase (mode 0600).
    func passphraseFile() throws -> String {
        let p = path("pass")
        try Data((Self.passphrase + "\n").utf8).write(to: URL(fileURLWithPath: p))
        chmod(p, 0o600)
        return p
    }
}

/// Expects `body` to throw a CofferError of `kind`.
func expectError<T>(
    _ kind: CofferError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws(CofferError) -> T
) async {
    do {
        _ = try await body()
        Issue.record("expected a \(kind) error, got success", sourceLocation: sourceLocation)
    } catch {
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
        #expect(!error.message.isEmpty && !error.message.contains("\n"), sourceLocation: sourceLocation)
    }
}

/// The built `coffer` executable (SwiftPM builds it with the tests).
enum CofferCLI {
    static var path: String? { CofferBinary.found }

    /// Runs `coffer args…` with this process's environment plus `env`
    /// (never a session or passphrase of the environment running the tests).
    static func run(_ args: [String], env: [String: String] = [:]) throws -> CLIResult {
        guard let path else {
            Issue.record("coffer binary not found; build it with `swift build`")
            return CLIResult(status: -1, stdout: "", stderr: "")
        }
        var environment = ProcessInfo.processInfo.environment
        environment["COFFER_SESSION"] = nil
        environment["COFFER_PASSPHRASE"] = nil
        for (k, v) in env { environment[k] = v }
        return Spawn.run(
            path, args, stdin: nil, fd3: nil, environment: environment, workDir: FileManager.default.currentDirectoryPath)
    }
}

/// Waits for the first element of `changes` that satisfies `predicate`,
/// at most `seconds`; nil on time-out. Callers pass a generous bound (it ends
/// as soon as the change is seen): on a loaded 2-core CI machine the tests
/// running beside this one can hold the cooperative pool for seconds.
func firstChange(
    _ changes: AsyncStream<VaultChange>, within seconds: Double, where predicate: @escaping @Sendable (VaultChange) -> Bool
) async -> VaultChange? {
    await withTaskGroup(of: VaultChange?.self) { group in
        group.addTask {
            for await change in changes where predicate(change) { return change }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
