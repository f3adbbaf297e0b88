// coffer-example: reads an API key through CofferKit, as an application
// on Linux would instead of using the Keychain.
//
//   COFFER_PASSPHRASE=… coffer-example ads            # prints a masked key
//   coffer-example ads --print --passphrase-fd 3 3<passphrase-file
//
// The vault is $COFFER_VAULT or the default XDG path. The passphrase is
// read from --passphrase-fd N, else $COFFER_PASSPHRASE, else asked on the
// terminal without echo.

import CofferKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String, _ code: Int32) -> Never {
    FileHandle.standardError.write(Data("coffer-example: \(message)\n".utf8))
    exit(code)
}

/// Reads the key for `source` and prints it (or a masked form).
func readKey(source: String, printKey: Bool, passphraseFD: Int32?) async throws(CofferError) {
    let input: CredentialManager.PassphraseInput
    if let fd = passphraseFD {
        input = .fileDescriptor(fd)
    } else if ProcessInfo.processInfo.environment["COFFER_PASSPHRASE"] != nil {
        input = .environment("COFFER_PASSPHRASE")
    } else {
        input = .terminal(prompt: "Vault passphrase: ")
    }
    let manager = try CredentialManager.open(passphrase: input)
    guard let credential = try await manager.retrieveCredential(for: source, type: .apiKey) else {
        throw CofferError(.itemNotFound, "no API key stored for source '\(source)'", hint: "add one with `coffer add NAME --source \(source)`")
    }
    if credential.isExpired, let day = credential.expires {
        FileHandle.standardError.write(Data("coffer-example: warning: the key for '\(source)' expired on \(day)\n".utf8))
    }
    if printKey {
        print(credential.value)
    } else {
        print("\(source): \(credential.value.prefix(4))… (\(credential.value.count) characters, from '\(credential.itemName)')")
    }
}

let args = Array(CommandLine.arguments.dropFirst())
guard let source = args.first, !source.hasPrefix("-") else {
    fail("usage: coffer-example SOURCE [--print] [--passphrase-fd N]", 64)
}
do {
    let fd = args.firstIndex(of: "--passphrase-fd").flatMap { i in i + 1 < args.count ? Int32(args[i + 1]) : nil }
    try await readKey(source: source, printKey: args.contains("--print"), passphraseFD: fd)
} catch {
    fail(error.message + (error.hint.map { " (\($0))" } ?? ""), error.exitCode)
}
