import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

/// What a prompt does once the user has given the passphrase.
struct PendingPrompt {
    enum Action {
        /// Unlock; the result is these objects.
        case unlock([String])
        /// Unlock, then create (or replace) this item.
        case createItem(collection: String, label: String, attributes: [String: String], secret: SecretServiceSecret, replace: Bool)
    }
    var owner: String
    var action: Action
}

extension SecretServiceDaemon {
    static let promptInterface = "org.freedesktop.Secret.Prompt"

    /// A new prompt object for `action`, owned by the caller.
    func makePrompt(_ action: PendingPrompt.Action, owner: String) throws(DBusErrorReply) -> String {
        guard prompts.count < 64 else { throw .failed("too many prompts are waiting") }
        let path = Self.promptPrefix + "p\(nextPrompt)"
        nextPrompt += 1
        prompts[path] = PendingPrompt(owner: owner, action: action)
        return path
    }

    func promptMethod(_ call: DBusCall, path: String, peer: Peer) throws(DBusErrorReply) -> [DBusValue] {
        guard let p = prompts[path], p.owner == call.sender else { throw .noSuchObject("\(path) is not a prompt of this client") }
        switch call.member {
        case "Prompt":
            try expect(call, "s")
            // Answered at once; the pinentry runs after the reply is sent
            // (``runPendingPrompt()``), and Completed tells the outcome.
            promptToRun = path
            log?("\(peer.program) asked to unlock; asking for the passphrase with a pinentry")
            return []
        case "Dismiss":
            try expect(call, "")
            prompts[path] = nil
            bus.emit(path: path, interface: Self.promptInterface, member: "Completed", [.boolean(true), .variant(.paths([]))])
            return []
        default:
            throw .unknownMethod("\(Self.promptInterface) has no method \(call.member)")
        }
    }

    /// Runs the prompt whose Prompt() was just answered: asks for the
    /// passphrase (three tries), unlocks, does what was asked, and emits
    /// Completed (dismissed when the user cancelled or no pinentry runs).
    func runPendingPrompt() {
        guard let path = promptToRun else { return }
        promptToRun = nil
        guard let p = prompts.removeValue(forKey: path) else { return }
        bus.flush()
        var retryText: String?
        for attempt in 0..<3 {
            if unlockedVault != nil { break }
            let passphrase: SecretBytes
            switch Pinentry.ask(
                description: "An application asks to unlock the Coffer vault \(file.path) (Secret Service).", error: retryText, attempt: attempt)
            {
            case .success(let secret): passphrase = secret
            case .failure(let why):
                log?("prompt dismissed: \(why.text)")
                if why.isNoPinentry { note("cannot ask for the passphrase: \(why.text)") }
                bus.emit(path: path, interface: Self.promptInterface, member: "Completed", [.boolean(true), .variant(.paths([]))])
                return
            }
            do {
                let v = try file.unlock(passphrase: passphrase)
                vault = v
                index = SecretServiceIndex(vault: v)
                sessionToken = nil
                log?("unlocked by a passphrase from the pinentry")
            } catch  where error.kind == .wrongPassphrase {
                retryText = "Wrong passphrase; try again."
            } catch {
                log?("unlock failed: \(error.message)")
                break
            }
        }
        guard unlockedVault != nil else {
            log?("prompt dismissed: no right passphrase given")
            bus.emit(path: path, interface: Self.promptInterface, member: "Completed", [.boolean(true), .variant(.paths([]))])
            return
        }
        switch p.action {
        case .unlock(let objects):
            emitLockChanged()
            bus.emit(path: path, interface: Self.promptInterface, member: "Completed", [.boolean(false), .variant(.paths(objects))])
        case .createItem(let collectionID, let label, let attributes, let secret, let replace):
            do {
                guard let c = try collections().first(where: { $0.id == collectionID }) else { throw DBusErrorReply.noSuchObject("the collection is gone") }
                let itemPath = try storeItem(in: c, label: label, attributes: attributes, secret: secret, replace: replace, program: "a prompted client")
                bus.emit(path: path, interface: Self.promptInterface, member: "Completed", [.boolean(false), .variant(.objectPath(itemPath))])
            } catch {
                log?("prompted CreateItem failed: \((error as? DBusErrorReply)?.message ?? "an internal error")")
                bus.emit(path: path, interface: Self.promptInterface, member: "Completed", [.boolean(true), .variant(.objectPath("/"))])
            }
        }
    }

    /// PropertiesChanged-free clients ask again; tell them the collections changed.
    func emitLockChanged() {
        for c in (try? collections()) ?? [] {
            bus.emit(path: Self.root, interface: Self.serviceInterface, member: "CollectionChanged", [.objectPath(Self.path(of: c))])
        }
    }

    /// Locks the vault: wipes its keys; the next use needs a prompt.
    func lockVault(_ why: String) {
        guard let v = vault, !v.isLocked else { return }
        let paths = (try? collections().map { Self.path(of: $0) }) ?? []
        v.lock()
        index?.clear()
        index = nil
        log?("locked: \(why)")
        for p in paths { bus.emit(path: Self.root, interface: Self.serviceInterface, member: "CollectionChanged", [.objectPath(p)]) }
    }

    /// Once a second or so: a service unlocked with the shell session
    /// locks when that session ends (`coffer lock`, or its idle time-out).
    func checkSession() {
        guard let token = sessionToken, let v = vault, !v.isLocked else { return }
        let now = Date()
        guard now.timeIntervalSince(lastSessionCheck) >= 1 else { return }
        lastSessionCheck = now
        if case .failure = Session.check(file: file, token: token, directory: .resolve()) {
            lockVault("the shell session it was unlocked with ended")
        }
    }
}

/// Asks for the passphrase through a pinentry program (`$COFFER_PINENTRY`,
/// else `pinentry` on PATH), speaking the Assuan protocol: SETDESC,
/// SETPROMPT, SETERROR, GETPIN, BYE.
enum Pinentry {
    struct Failure: Error {
        var text: String
        var isNoPinentry = false
    }

    static func program() -> String? {
        let env = ProcessInfo.processInfo.environment
        let name = env["COFFER_PINENTRY"].flatMap { $0.isEmpty ? nil : $0 } ?? "pinentry"
        if name.hasPrefix("/") { return access(name, X_OK) == 0 ? name : nil }
        return PipedProcess.which(name, path: env["PATH"])
    }

    /// Assuan's escaping of a parameter: %, CR, LF as %XX.
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "%": out += "%25"
            case "\r": out += "%0D"
            case "\n": out += "%0A"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    static func ask(description: String, error: String?, attempt: Int) -> Result<SecretBytes, Failure> {
        guard let exe = program() else {
            return .failure(Failure(text: "no pinentry program (install pinentry, or set COFFER_PINENTRY)", isNoPinentry: true))
        }
        var commands = "SETDESC \(escape(description))\nSETPROMPT Passphrase:\nSETTITLE Coffer\n"
        if let error { commands += "SETERROR \(escape(error))\n" }
        commands += "GETPIN\nBYE\n"
        let result: PipedProcess.Result
        do {
            result = try PipedProcess.run([exe], environment: nil, input: Array(commands.utf8), captureOutput: true, maxOutput: 1 << 20, timeoutMillis: 300_000)
        } catch {
            return .failure(Failure(text: "cannot run \(exe)", isNoPinentry: true))
        }
        var output = result.output
        defer { for i in output.indices { output[i] = 0 } }
        guard !result.timedOut else { return .failure(Failure(text: "the pinentry timed out")) }
        // The reply to GETPIN: `D <escaped passphrase>` then OK, or ERR.
        var lines = output.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        defer {
            for i in lines.indices { lines[i] = [] }
        }
        guard let data = lines.first(where: { $0.starts(with: Array("D ".utf8)) }) else {
            return .failure(Failure(text: "the pinentry gave no passphrase (cancelled)"))
        }
        var decoded: [UInt8] = []
        var i = data.index(data.startIndex, offsetBy: 2)
        while i < data.endIndex {
            let b = data[i]
            if b == UInt8(ascii: "%"), data.distance(from: i, to: data.endIndex) >= 3,
                let v = UInt8(String(decoding: data[data.index(after: i)...data.index(i, offsetBy: 2)], as: UTF8.self), radix: 16)
            {
                decoded.append(v)
                i = data.index(i, offsetBy: 3)
            } else {
                decoded.append(b)
                i = data.index(after: i)
            }
        }
        if decoded.last == UInt8(ascii: "\r") { decoded.removeLast() }
        guard !decoded.isEmpty else { return .failure(Failure(text: "the pinentry gave an empty passphrase")) }
        return .success(SecretBytes(consuming: &decoded))
    }
}
