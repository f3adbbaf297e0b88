// coffer-example: a small application that keeps its credentials in a
// Coffer vault through CofferKit, as an app on Apple's systems would use
// the Keychain. Copy it as a starting point; docs/cofferkit.md explains
// each call.
//
//   coffer-example demo                  # store a login and an API key, read them back
//   coffer-example service               # keep an API key and its server URL in the app's own folder, then lock
//   coffer-example watch example/api-key # print the key, then again whenever it changes, until the vault is locked
//   coffer-example SOURCE [--print]      # the API key stored for a source id
//
// Unlocking, like the `coffer` command: --passphrase-fd N, else the shell
// session ($COFFER_SESSION after `eval "$(coffer unlock)"`), else
// $COFFER_PASSPHRASE, else a prompt on the terminal. The vault is
// $COFFER_VAULT or the default XDG path. Opened through the session, the
// app stops getting secrets as soon as the session ends (`coffer lock`).

import CofferKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String, _ code: Int32) -> Never {
    FileHandle.standardError.write(Data("coffer-example: \(message)\n".utf8))
    exit(code)
}

/// One line on standard output, written at once (a watcher's output is
/// read while it runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A value shown without revealing it: its first characters and length.
func masked(_ value: String) -> String { "\(value.prefix(4))… (\(value.count) characters)" }

/// The app's service: its items live in the vault folder apps/SERVICE/.
let service = "com.example.keychain-app"

/// Opens the vault the way the `coffer` command does; with `service`,
/// names are relative to the app's own folder, as a Keychain service.
func openVault(passphraseFD: Int32?, service: String? = nil) async throws(CofferError) -> Coffer {
    // Explicit and once, at start-up: no core dumps, no ptrace. CofferKit
    // never changes the process by itself.
    Coffer.hardenProcess()
    let unlock = Coffer.Unlock.automatic(passphraseFD: passphraseFD, prompt: "Vault passphrase: ")
    if let service { return try await Coffer.open(service: service, unlock) }
    return try await Coffer.open(unlock)
}

/// What an app talking to its own server keeps: the API key and the
/// server's URL, together, in its own folder; then it locks the vault
/// (a user signing out) and shows that the keys are gone.
func serviceDemo(_ coffer: Coffer) async throws(CofferError) {
    try await coffer.set("ex-server-0123456789abcdef", for: "api", url: "https://api.example.org")
    guard let (key, url) = try await coffer.credential(for: "api") else {
        throw CofferError(.itemNotFound, "the API key vanished")
    }
    say("api: \(masked(key)) for \(url ?? "no URL")")
    say("items of \(coffer.service ?? "the vault"): \(try await coffer.items().map(\.name).joined(separator: ", "))")
    await coffer.lock()
    do {
        _ = try await coffer.credential(for: "api")
        say("after lock: still readable (a bug)")
    } catch  where error.kind == .locked {
        say("after lock: refused (\(error.kind))")
    }
}

/// Stores a login and an API key, then reads them back.
func demo(_ coffer: Coffer) async throws(CofferError) {
    try await coffer.set(
        "correct-horse-battery", for: "example/login",
        kind: .login(username: "ada@example.org", url: "https://example.org/login"))
    let warnings = try await coffer.set("ex-0123456789abcdefghij", for: "example/api-key", kind: .apiKey, source: "example")
    for w in warnings { FileHandle.standardError.write(Data("coffer-example: warning: \(w.message)\n".utf8)) }

    guard let login = try await coffer.item(named: "example/login") else {
        throw CofferError(.itemNotFound, "example/login vanished")
    }
    say("login: \(login.field("username")?.value ?? "?") at \(login.field("url")?.value ?? "?"), password \(masked(login.field("password")?.value ?? ""))")
    if let key = try await coffer.string(forSource: "example") {
        say("api key for source 'example': \(masked(key))")
    }
}

/// Prints the value of `name`, then again after each change made to it by
/// another process (`coffer edit`, a sync…), `count` times (0: forever),
/// until the vault is locked (the shell session it was opened with ended).
func watch(_ coffer: Coffer, name: String, count: Int) async throws(CofferError) {
    guard let first = try await coffer.string(for: name) else {
        throw CofferError(.itemNotFound, "no item named '\(name)'", hint: "run `coffer-example demo` first")
    }
    let changes = coffer.changes
    say("\(name): \(masked(first)); watching for changes")
    var seen = 0
    for await change in changes where change.items.contains(name) || change.fileReplaced || change.locked {
        if change.locked {
            say("\(name): the vault was locked; stopping")
            throw CofferError(.locked, "the vault was locked", hint: "unlock it and start coffer-example again")
        }
        if change.fileReplaced { throw CofferError(.badData, "the vault file was replaced", hint: "start coffer-example again") }
        let value = try await coffer.string(for: name)
        say("\(name) changed: \(value.map(masked) ?? "removed")")
        seen += 1
        if count > 0 && seen >= count { return }
    }
}

/// Reads the API key stored for `source`, as a program needing one would.
func readKey(_ coffer: Coffer, source: String, printKey: Bool) async throws(CofferError) {
    let candidates = try await coffer.candidates(for: source, type: .apiKey)
    guard let item = candidates.first, let key = item.field("key")?.value else {
        throw CofferError(.itemNotFound, "no API key stored for source '\(source)'", hint: "add one with `coffer add NAME --source \(source)`")
    }
    if candidates.count > 1 {
        FileHandle.standardError.write(Data("coffer-example: note: \(candidates.count) items hold a key for '\(source)'; using '\(item.name)'\n".utf8))
    }
    if item.isExpired(), let day = item.expires {
        FileHandle.standardError.write(Data("coffer-example: warning: the key for '\(source)' expired on \(day)\n".utf8))
    }
    say(printKey ? key : "\(source): \(key.prefix(4))… (\(key.count) characters, from '\(item.name)')")
}

var args = Array(CommandLine.arguments.dropFirst())
/// Removes `name VALUE` from `args` and returns VALUE.
func option(_ name: String, from args: inout [String]) -> String? {
    guard let i = args.firstIndex(of: name) else { return nil }
    guard i + 1 < args.count else { fail("\(name) needs a value", 64) }
    let value = args[i + 1]
    args.removeSubrange(i...(i + 1))
    return value
}
let usage = "usage: coffer-example demo | service | watch NAME [--count N] | SOURCE [--print]  [--passphrase-fd N]"
let fdText = option("--passphrase-fd", from: &args)
let countText = option("--count", from: &args)
let printKey = args.contains("--print")
args.removeAll { $0 == "--print" }
guard let command = args.first, !command.hasPrefix("-") else { fail(usage, 64) }
guard fdText.map({ Int32($0) != nil }) ?? true, countText.map({ (Int($0) ?? -1) >= 0 }) ?? true else {
    fail("--passphrase-fd and --count take a number (\(usage))", 64)
}

// Arguments are checked before the vault is opened: a usage error never
// asks for a passphrase.
if command == "watch" && args.count != 2 { fail(usage, 64) }
if command != "watch" && args.count != 1 { fail(usage, 64) }

do {
    let coffer = try await openVault(passphraseFD: fdText.flatMap { Int32($0) }, service: command == "service" ? service : nil)
    switch command {
    case "service":
        try await serviceDemo(coffer)
    case "demo":
        try await demo(coffer)
    case "watch":
        try await watch(coffer, name: args[1], count: countText.flatMap { Int($0) } ?? 0)
    default:
        try await readKey(coffer, source: command, printKey: printKey)
    }
} catch {
    fail(error.message + (error.hint.map { " (\($0))" } ?? ""), error.exitCode)
}
