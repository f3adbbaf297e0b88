import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Clip: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clip",
        abstract: "Copy a secret to the clipboard, cleared after a delay.",
        discussion: """
            Uses wl-copy (Wayland), xclip or xsel (X11), whichever the session has; the value goes \
            to the tool through a pipe, never on a command line. After --clear-after (default 45s; \
            0 keeps it) a detached coffer clears the clipboard, but only if it still holds the \
            value (so something copied since is left alone).
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.", completion: .custom(Completion.itemNames))
    var name: String

    @Option(help: "Field to copy (default: the type's primary secret).", completion: .custom(Completion.fieldNames))
    var field: String?

    @Option(help: ArgumentHelp("Clear the clipboard after this long: 45s, 2m, 0 for never (at most 24h).", valueName: "span"))
    var clearAfter = Clip.defaultClearAfter

    /// The default of `--clear-after`, which the fast path (FastPath.swift)
    /// uses too.
    static let defaultClearAfter = "45s"

    func run() throws {
        let seconds = try Clip.parseDelay(clearAfter)
        let tool = try ClipboardTool.detect()
        // Started early only when the vault opens with the shell session
        // (no prompt, no KDF), as Unlocking decides.
        let early = options.unlocksWithSession
        try Clip.execute(name: name, field: field, tool: tool, seconds: seconds, startEarly: early) { () throws(CofferError) in
            try options.unlock()
        }
    }

    /// Shared with ``FastPath``. With `startEarly` the clipboard tool is
    /// started before the vault is unlocked, so that its own start (exec,
    /// its libraries, connecting to the display: about 2 ms for xclip)
    /// runs on the other core while coffer unlocks and finds the item; it
    /// gets the value, and with it the end of its input, only once the
    /// value is known, and is killed before it sees end of input if
    /// anything fails (docs/user-guide.md, "clip").
    static func execute(
        name: String, field: String?, tool: ClipboardTool, seconds: Int, startEarly: Bool, unlock: () throws(CofferError) -> Vault
    ) throws(CofferError) {
        let early = startEarly ? try tool.start() : nil
        let chosen: Field
        let itemName: String
        do throws(CofferError) {
            let vault = try unlock()
            let item = try vault.item(named: name)
            ItemWarnings.emit(for: item)
            chosen = try Get.choose(item, field)
            itemName = item.name
            if chosen.isFile {
                throw CofferError(
                    .usage, "'\(chosen.name)' of '\(item.name)' is an attachment; it is not copied to the clipboard",
                    hint: "save it with `coffer get \(item.name) --field \(chosen.name) --out FILE`")
            }
        } catch {
            early?.cancel()
            throw error
        }
        let started: PipedProcess.Started
        if let early { started = early } else { started = try tool.start() }
        // The clearer is started before the tool gets the value, so that
        // its start (this process waits, vforked, until its exec) overlaps
        // the tool's; it gets the value only once the tool has succeeded,
        // and an empty input (the tool failed) ends it. Should it not
        // start, the tool is killed unfed: nothing is copied that would
        // not be cleared.
        let clearer = seconds > 0 ? try tool.startClearer(after: seconds) : nil
        try tool.copy(chosen.bytes, through: started)
        if let clearer {
            clearer.send(chosen.bytes)
            Output.note("copied '\(chosen.name)' of \(itemName) to the clipboard (\(tool.name)); clearing it in \(seconds)s")
        } else {
            Output.note("copied '\(chosen.name)' of \(itemName) to the clipboard (\(tool.name)); it stays there")
        }
    }

    /// `45s`, `2m`, `1h`, a bare number of seconds, or 0.
    static func parseDelay(_ text: String) throws(CofferError) -> Int {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
        var number = Substring(text)
        var scale = 1
        if let last = text.last, let u = units[last] {
            number = text.dropLast()
            scale = u
        }
        guard let n = Int(number), n >= 0, n <= 86400 / scale else {
            throw CofferError(
                .usage, "invalid --clear-after '\(text.prefix(32))'", hint: "use a span such as 45s, 2m or 1h (at most 24h), or 0 to keep the value")
        }
        return n * scale
    }
}

/// A clipboard program and how to copy to, read and clear the clipboard
/// with it.
struct ClipboardTool {
    var name: String
    var path: String
    var copyArgs: [String]
    var pasteArgs: [String]
    var clearArgs: [String]?

    /// One environment variable (getenv: no dictionary of the whole
    /// environment is built on `clip`'s path). Children get this process's
    /// environment as it is.
    static func env(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// The first tool the session can use: wl-copy under Wayland, else
    /// xclip, else xsel under X11.
    static func detect() throws(CofferError) -> ClipboardTool {
        let path = env("PATH")
        if env("WAYLAND_DISPLAY").map({ !$0.isEmpty }) ?? false, let copy = PipedProcess.which("wl-copy", path: path),
            let paste = PipedProcess.which("wl-paste", path: path)
        {
            return ClipboardTool(name: "wl-copy", path: copy, copyArgs: [], pasteArgs: [paste, "--no-newline"], clearArgs: ["--clear"])
        }
        if env("DISPLAY").map({ !$0.isEmpty }) ?? false {
            if let x = PipedProcess.which("xclip", path: path) {
                return ClipboardTool(
                    name: "xclip", path: x, copyArgs: ["-selection", "clipboard", "-in"], pasteArgs: [x, "-selection", "clipboard", "-out"], clearArgs: nil)
            }
            if let x = PipedProcess.which("xsel", path: path) {
                return ClipboardTool(
                    name: "xsel", path: x, copyArgs: ["--clipboard", "--input"], pasteArgs: [x, "--clipboard", "--output"],
                    clearArgs: ["--clipboard", "--clear"])
            }
        }
        let session = (env("WAYLAND_DISPLAY").map { !$0.isEmpty } ?? false) || (env("DISPLAY").map { !$0.isEmpty } ?? false)
        throw CofferError(
            .fileNotFound,
            session
                ? "no clipboard tool found: coffer clip needs wl-copy (Wayland), xclip or xsel (X11) on PATH"
                : "no clipboard: neither WAYLAND_DISPLAY nor DISPLAY is set, and coffer clip needs wl-copy, xclip or xsel",
            hint: session ? "install wl-clipboard, xclip or xsel" : "run it in a graphical session, or print the value with `coffer get`")
    }

    /// Starts the tool's copy command; it waits for the value on its stdin.
    func start() throws(CofferError) -> PipedProcess.Started {
        do {
            return try PipedProcess.start([path] + copyArgs, environment: nil)
        } catch {
            throw CofferError(.internalError, "cannot start \(name): \(error)")
        }
    }

    /// Puts `value` on the clipboard through the stdin of `started` (from
    /// ``start()``), and waits for the tool to exit: its exit status is
    /// the only way to know the clipboard was set.
    func copy(_ value: [UInt8], through started: PipedProcess.Started) throws(CofferError) {
        let r = started.finish(input: value)
        guard r.termination.exitCode == 0, !r.timedOut else {
            throw CofferError(
                .internalError, "\(name) failed (exit \(r.termination.status)); the clipboard was not set",
                hint: "check that the display \(ClipboardTool.env("DISPLAY") ?? ClipboardTool.env("WAYLAND_DISPLAY") ?? "") is reachable")
        }
    }

    /// What the clipboard holds now (nil when it cannot be read).
    func paste() -> [UInt8]? {
        guard let r = try? PipedProcess.run(pasteArgs, environment: nil, input: nil, captureOutput: true, maxOutput: Field.maxValueBytes + 1),
            r.termination.exitCode == 0, !r.timedOut
        else { return nil }
        return r.output
    }

    func clear() {
        if let clearArgs {
            _ = try? PipedProcess.run([path] + clearArgs, environment: nil, input: nil, captureOutput: false)
        } else {
            _ = try? PipedProcess.run([path] + copyArgs, environment: nil, input: [], captureOutput: false)
        }
    }

    /// Starts a detached `coffer clip-clear` that, once sent the value
    /// (through a pipe), clears the clipboard after `seconds` if it still
    /// holds that value.
    func startClearer(after seconds: Int) throws(CofferError) -> PipedProcess.Detached {
        let me = ClipboardTool.executablePath()
        do {
            return try PipedProcess.spawnDetached([me, "clip-clear", "--tool", name, "--after", String(seconds)], environment: nil)
        } catch {
            throw CofferError(
                .internalError, "cannot start the clipboard clearer: \(error)", hint: "nothing was copied; use --clear-after 0 to copy without clearing")
        }
    }

    static func named(_ name: String) -> ClipboardTool? {
        (try? detect()).flatMap { $0.name == name ? $0 : nil }
    }

    static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 { return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return CommandLine.arguments[0]
    }
}

/// The detached half of `coffer clip`: reads the value from stdin, keeps
/// only a keyed hash of it, waits, and clears the clipboard if it still
/// holds the value.
struct ClipClear: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clip-clear", abstract: "Internal: clears the clipboard for `coffer clip`.", shouldDisplay: false)

    @Option var tool: String
    @Option var after: Int

    func run() throws {
        ClipClear.clear(tool: tool, after: after)
    }

    /// The command line ``ClipboardTool/scheduleClear(of:after:)`` builds,
    /// `clip-clear --tool NAME --after SECONDS`, read without
    /// argument-parser (whose start-up is most of a coffer process's
    /// instructions, docs/benchmarks-verbs.md); anything else is left to it.
    static func direct(_ args: [String]) -> (tool: String, after: Int)? {
        // A value that starts with `-` is an option to argument-parser,
        // which refuses the line (FastPathDriftTests).
        guard args.count == 5, args[0] == "clip-clear", args[1] == "--tool", args[3] == "--after", !args[2].hasPrefix("-"), !args[4].hasPrefix("-"),
            let after = Int(args[4])
        else { return nil }
        return (args[2], after)
    }

    /// Reads the value, keeps only a keyed hash of it, sleeps, then finds
    /// the tool (the same PATH and display as the `coffer clip` that
    /// started it) and clears the clipboard if it still holds the value.
    static func clear(tool: String, after: Int) {
        var value = PipedProcess.readStandardInput(max: Field.maxValueBytes)
        // Empty: `coffer clip` was not able to copy (or copied an empty
        // value, which there is no point clearing).
        guard !value.isEmpty else { return }
        let key = SecretBytes.random(count: 32)
        let expected = KeyedHash.hash(value, key: key)
        _ = value.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
        sleep(UInt32(max(0, min(after, 86400))))
        guard let t = ClipboardTool.named(tool), let now = t.paste() else { return }
        if KeyedHash.hash(now, key: key) == expected { t.clear() }
    }
}
