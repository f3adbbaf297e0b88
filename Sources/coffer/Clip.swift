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
    var clearAfter = "45s"

    func run() throws {
        let seconds = try Clip.parseDelay(clearAfter)
        let tool = try ClipboardTool.detect()
        try Clip.execute(vault: try options.unlock(), name: name, field: field, tool: tool, seconds: seconds)
    }

    /// Shared with ``FastPath``.
    static func execute(vault: Vault, name: String, field: String?, tool: ClipboardTool, seconds: Int) throws {
        let item = try vault.item(named: name)
        ItemWarnings.emit(for: item)
        let chosen = try Get.choose(item, field)
        if chosen.isFile {
            throw CofferError(.usage, "'\(chosen.name)' of '\(item.name)' is an attachment; it is not copied to the clipboard", hint: "save it with `coffer get \(item.name) --field \(chosen.name) --out FILE`")
        }
        try tool.copy(chosen.bytes)
        if seconds > 0 {
            try tool.scheduleClear(of: chosen.bytes, after: seconds)
            Output.note("copied '\(chosen.name)' of \(item.name) to the clipboard (\(tool.name)); clearing it in \(seconds)s")
        } else {
            Output.note("copied '\(chosen.name)' of \(item.name) to the clipboard (\(tool.name)); it stays there")
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
            throw CofferError(.usage, "invalid --clear-after '\(text.prefix(32))'", hint: "use a span such as 45s, 2m or 1h (at most 24h), or 0 to keep the value")
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

    static let environment: [String] = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }

    /// The first tool the session can use: wl-copy under Wayland, else
    /// xclip, else xsel under X11.
    static func detect() throws(CofferError) -> ClipboardTool {
        let env = ProcessInfo.processInfo.environment
        let path = env["PATH"]
        if env["WAYLAND_DISPLAY"].map({ !$0.isEmpty }) ?? false, let copy = PipedProcess.which("wl-copy", path: path),
            let paste = PipedProcess.which("wl-paste", path: path)
        {
            return ClipboardTool(name: "wl-copy", path: copy, copyArgs: [], pasteArgs: [paste, "--no-newline"], clearArgs: ["--clear"])
        }
        if env["DISPLAY"].map({ !$0.isEmpty }) ?? false {
            if let x = PipedProcess.which("xclip", path: path) {
                return ClipboardTool(name: "xclip", path: x, copyArgs: ["-selection", "clipboard", "-in"], pasteArgs: [x, "-selection", "clipboard", "-out"], clearArgs: nil)
            }
            if let x = PipedProcess.which("xsel", path: path) {
                return ClipboardTool(name: "xsel", path: x, copyArgs: ["--clipboard", "--input"], pasteArgs: [x, "--clipboard", "--output"], clearArgs: ["--clipboard", "--clear"])
            }
        }
        let session = (env["WAYLAND_DISPLAY"].map { !$0.isEmpty } ?? false) || (env["DISPLAY"].map { !$0.isEmpty } ?? false)
        throw CofferError(
            .fileNotFound,
            session
                ? "no clipboard tool found: coffer clip needs wl-copy (Wayland), xclip or xsel (X11) on PATH"
                : "no clipboard: neither WAYLAND_DISPLAY nor DISPLAY is set, and coffer clip needs wl-copy, xclip or xsel",
            hint: session ? "install wl-clipboard, xclip or xsel" : "run it in a graphical session, or print the value with `coffer get`")
    }

    /// Puts `value` on the clipboard (through the tool's stdin).
    func copy(_ value: [UInt8]) throws(CofferError) {
        let r: PipedProcess.Result
        do {
            r = try PipedProcess.run([path] + copyArgs, environment: ClipboardTool.environment, input: value, captureOutput: false)
        } catch {
            throw CofferError(.internalError, "cannot start \(name): \(error)")
        }
        guard r.termination.exitCode == 0, !r.timedOut else {
            throw CofferError(.internalError, "\(name) failed (exit \(r.termination.status)); the clipboard was not set", hint: "check that the display \(ProcessInfo.processInfo.environment["DISPLAY"] ?? ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"] ?? "") is reachable")
        }
    }

    /// What the clipboard holds now (nil when it cannot be read).
    func paste() -> [UInt8]? {
        guard let r = try? PipedProcess.run(pasteArgs, environment: ClipboardTool.environment, input: nil, captureOutput: true, maxOutput: Field.maxValueBytes + 1),
            r.termination.exitCode == 0, !r.timedOut
        else { return nil }
        return r.output
    }

    func clear() {
        if let clearArgs {
            _ = try? PipedProcess.run([path] + clearArgs, environment: ClipboardTool.environment, input: nil, captureOutput: false)
        } else {
            _ = try? PipedProcess.run([path] + copyArgs, environment: ClipboardTool.environment, input: [], captureOutput: false)
        }
    }

    /// Starts a detached `coffer clip-clear` that clears the clipboard
    /// after `seconds` if it still holds `value`; the value reaches it
    /// through a pipe.
    func scheduleClear(of value: [UInt8], after seconds: Int) throws(CofferError) {
        let me = ClipboardTool.executablePath()
        do {
            try PipedProcess.spawnDetached([me, "clip-clear", "--tool", name, "--after", String(seconds)], environment: ClipboardTool.environment, input: value)
        } catch {
            throw CofferError(.internalError, "cannot start the clipboard clearer: \(error)", hint: "the value stays on the clipboard; clear it by copying something else")
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
    static let configuration = CommandConfiguration(commandName: "clip-clear", abstract: "Internal: clears the clipboard for `coffer clip`.", shouldDisplay: false)

    @Option var tool: String
    @Option var after: Int

    func run() throws {
        var value = PipedProcess.readStandardInput(max: Field.maxValueBytes)
        let key = SecretBytes.random(count: 32)
        let expected = KeyedHash.hash(value, key: key)
        value.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
        guard let t = ClipboardTool.named(tool) else { return }
        sleep(UInt32(max(0, min(after, 86400))))
        guard let now = t.paste() else { return }
        if KeyedHash.hash(now, key: key) == expected { t.clear() }
    }
}
