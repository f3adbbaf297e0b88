import CSystemd
import CofferCrypto
import CofferKit
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why the service could not start.
public enum SecretServiceStartFailure: Error {
    /// No session bus (DBUS_SESSION_BUS_ADDRESS unset or unreachable).
    case noBus(String)
    /// Another connection owns org.freedesktop.secrets.
    case nameTaken(pid: Int32?, executable: String?)
    case bus(String)
}

/// `coffer secret-service`: the Secret Service API
/// (https://specifications.freedesktop.org/secret-service/) on the user's
/// session bus, over a Coffer vault (docs/secret-service.md). One thread:
/// sd-bus hands each message to ``handle(_:)``, which answers it before the
/// next is read.
public final class SecretServiceDaemon {
    public static let busName = "org.freedesktop.secrets"
    static let root = "/org/freedesktop/secrets"
    static let collectionPrefix = root + "/collection/"
    static let aliasPrefix = root + "/aliases/"
    static let sessionPrefix = root + "/session/"
    static let promptPrefix = root + "/prompt/"

    let bus: SessionBus
    let file: VaultFile
    var vault: Vault?
    var index: SecretServiceIndex?
    /// Writes one line of `--log` (names, never secrets); nil: no log.
    let log: ((String) -> Void)?
    let uid = getuid()

    /// Says something the user must see even without --log (no pinentry).
    let notice: (String) -> Void
    var sessions: [String: ServiceSession] = [:]
    var nextSession = 1
    var prompts: [String: PendingPrompt] = [:]
    var nextPrompt = 1
    /// The prompt whose Prompt() was answered, to run after the reply.
    var promptToRun: String?
    /// The shell session the vault was unlocked with, checked while the
    /// service runs: its end locks the service.
    var sessionToken: String?
    var lastSessionCheck = Date.distantPast
    var stopReason: String?
    /// Each client connection's credentials, by its unique bus name: the
    /// bus daemon took them (SO_PEERCRED) when the client connected and
    /// they cannot change, and a unique name is never given again on the
    /// same bus, so asking the daemon once per connection is enough (a
    /// round trip to it per message was most of a small request's time).
    /// Forgotten when the client leaves.
    var peers: [String: Peer] = [:]

    /// The sender of `m` (unique name `name`), from ``peers`` or the bus.
    func sender(of m: OpaquePointer, name: String) -> Peer? {
        if let known = peers[name] { return known }
        guard let p = bus.sender(of: m) else { return nil }
        guard name.hasPrefix(":") else { return p }
        // Bounded: a flood of short connections whose departure was missed
        // cannot grow it without end.
        if peers.count >= 4096 { peers.removeAll() }
        peers[name] = p
        return p
    }

    func note(_ text: String) { if let log { log(text) } else { notice(text) } }

    /// Connects to the session bus and takes the name. The vault is
    /// `vault`, unlocked; nil: the service starts locked, and the first
    /// Unlock prompts for the passphrase.
    public init(
        file: VaultFile, vault: Vault?, sessionToken: String?, replace: Bool, log: ((String) -> Void)?, notice: @escaping (String) -> Void
    ) throws(SecretServiceStartFailure) {
        do {
            bus = try SessionBus()
        } catch {
            throw .noBus(error.text)
        }
        self.file = file
        self.vault = vault
        self.index = vault.map { SecretServiceIndex(vault: $0) }
        self.log = log
        self.notice = notice
        self.sessionToken = sessionToken
        do {
            try bus.requestName(Self.busName, replace: replace)
        } catch  where error.code == EEXIST || error.code == EALREADY {
            let owner = bus.owner(of: Self.busName)
            throw .nameTaken(pid: owner?.pid, executable: owner?.executable)
        } catch {
            throw .bus(error.text)
        }
    }

    /// Serves until the name is lost (another service took it with
    /// --replace), the bus goes away, or SIGTERM/SIGINT. Returns why it
    /// stopped.
    public func run() throws(SecretServiceStartFailure) -> String {
        let me = Unmanaged.passUnretained(self).toOpaque()
        do {
            try bus.addFallback(Self.root, messageHandler, userdata: me)
            try bus.matchDaemonSignal("NameLost", nameLostHandler, userdata: me)
            try bus.matchDaemonSignal("NameOwnerChanged", ownerChangedHandler, userdata: me)
            try bus.run(
                afterEach: {
                    self.runPendingPrompt()
                    self.checkSession()
                }, until: { self.stopReason != nil || SignalFlag.raised })
        } catch {
            throw .bus(error.text)
        }
        return stopReason ?? "stopped by a signal"
    }

    // MARK: Dispatch

    func handle(_ m: OpaquePointer) -> Int32 {
        var call = SessionBus.call(from: m)
        if call.interface == "org.freedesktop.DBus.Peer" { return 0 }
        let peer = sender(of: m, name: call.sender)
        guard let peer, peer.uid == uid else {
            log?("refused \(call.member) from \(peer?.program ?? "an unknown sender"): another user (uid \(peer?.uid.map(String.init) ?? "unknown"))")
            bus.replyError(to: m, .accessDenied("the Secret Service of uid \(uid) serves that user only"))
            return 1
        }
        do {
            call.arguments = try DBusReader.readAll(m)
        } catch {
            bus.replyError(to: m, .invalidArgs("cannot read the arguments: \(error.text)"))
            return 1
        }
        do {
            let values = try dispatch(call, peer: peer)
            do { try bus.reply(to: m, values) } catch { log?("could not answer \(call.member) to \(peer.program): \(error.text)") }
        } catch {
            bus.replyError(to: m, error)
        }
        return 1
    }

    func dispatch(_ call: DBusCall, peer: Peer) throws(DBusErrorReply) -> [DBusValue] {
        let object = try resolve(call.path)
        switch call.interface {
        case "org.freedesktop.DBus.Introspectable":
            guard call.member == "Introspect", call.signature.isEmpty else { throw .unknownMethod("no method \(call.member)") }
            return [.string(try introspect(object))]
        case "org.freedesktop.DBus.Properties":
            return try properties(call, object, peer: peer)
        case Self.promptInterface:
            guard case .prompt(let path) = object else { throw .unknownMethod("\(call.path) is not a prompt") }
            return try promptMethod(call, path: path, peer: peer)
        case "":
            // A call without interface: the member names it.
            throw .unknownMethod("give the interface of \(call.member)")
        default:
            return try method(call, object, peer: peer)
        }
    }

    /// Checks the call's signature.
    func expect(_ call: DBusCall, _ signature: String) throws(DBusErrorReply) {
        guard call.signature == signature else {
            throw .invalidArgs("\(call.member) takes (\(signature)), not (\(call.signature))")
        }
    }

    // MARK: Objects

    enum Object {
        case service
        case collection(SecretServiceCollection, path: String)
        case item(SecretServiceCollection, Item)
        case session(String)
        case prompt(String)
        /// A folder of the path tree (for introspection).
        case node([String])
    }

    var unlockedVault: Vault? {
        guard let v = vault, !v.isLocked else { return nil }
        return v
    }

    func requireVault() throws(DBusErrorReply) -> Vault {
        guard let v = unlockedVault else { throw .isLocked("the vault is locked; unlock it first") }
        return v
    }

    /// The default collection, the only one known while the vault is locked.
    static let defaultCollection = SecretServiceCollection(
        id: "default", folder: Vault.secretServiceDefaultFolder, label: "Coffer", created: Date(timeIntervalSince1970: 0))

    /// The collections (only the default one while locked: the others are
    /// registered inside the vault).
    func collections() throws(DBusErrorReply) -> [SecretServiceCollection] {
        guard unlockedVault != nil, let index else { return [Self.defaultCollection] }
        return try wrap { () throws(CofferError) in try index.collections() }
    }

    func wrap<T>(_ body: () throws(CofferError) -> T) throws(DBusErrorReply) -> T {
        do {
            return try body()
        } catch {
            switch error.kind {
            case .itemNotFound: throw .noSuchObject(error.message)
            case .locked: throw .isLocked(error.message)
            case .usage, .badData, .duplicateName: throw .invalidArgs(error.message)
            default: throw .failed(error.message)
            }
        }
    }

    static func path(of c: SecretServiceCollection) -> String { collectionPrefix + c.id }
    static func path(of item: ItemID, in c: SecretServiceCollection) -> String { path(of: c) + "/" + item.hex }

    func collection(alias: String) throws(DBusErrorReply) -> SecretServiceCollection? {
        guard unlockedVault != nil, let index else { return alias == "default" || alias == "login" ? Self.defaultCollection : nil }
        let aliases = try wrap { () throws(CofferError) in try index.aliases() }
        guard let id = aliases[alias], !id.isEmpty else { return nil }
        return try collections().first { $0.id == id }
    }

    func resolve(_ path: String) throws(DBusErrorReply) -> Object {
        if path == Self.root { return .service }
        if path == Self.root + "/collection" {
            return .node(unlockedVault == nil ? [] : try collections().map(\.id))
        }
        if path == Self.root + "/aliases" { return .node(["default", "login"]) }
        if path == Self.root + "/session" { return .node(sessions.keys.map { String($0.dropFirst(Self.sessionPrefix.count)) }.sorted()) }
        if path.hasPrefix(Self.sessionPrefix), sessions[path] != nil { return .session(path) }
        if path.hasPrefix(Self.promptPrefix), prompts[path] != nil { return .prompt(path) }
        var rest: Substring
        var c: SecretServiceCollection?
        if path.hasPrefix(Self.collectionPrefix) {
            rest = path.dropFirst(Self.collectionPrefix.count)
            let id = rest.prefix { $0 != "/" }
            c = try collections().first { $0.id == id }
            rest = rest.dropFirst(id.count)
        } else if path.hasPrefix(Self.aliasPrefix) {
            rest = path.dropFirst(Self.aliasPrefix.count)
            let alias = rest.prefix { $0 != "/" }
            c = try collection(alias: String(alias))
            rest = rest.dropFirst(alias.count)
        } else {
            throw .noSuchObject("no object \(path)")
        }
        guard let c else { throw .noSuchObject("no collection at \(path)") }
        if rest.isEmpty { return .collection(c, path: path) }
        guard rest.hasPrefix("/"), let id = ItemID(hex: String(rest.dropFirst())) else { throw .noSuchObject("no object \(path)") }
        let v = try requireVault()
        let item: Item
        do {
            item = try v.item(named: "id:" + id.hex)
        } catch {
            throw .noSuchObject("no item \(path)")
        }
        guard c.contains(item.name) else { throw .noSuchObject("no item \(path)") }
        return .item(c, item)
    }

    func items(of c: SecretServiceCollection) throws(DBusErrorReply) -> [SecretServiceItem] {
        guard let index, unlockedVault != nil else { return [] }
        return try wrap { () throws(CofferError) in try index.items() }[c.id] ?? []
    }
}

/// SIGTERM and SIGINT end the service's loop (the loop wakes at least
/// once a second to look).
extension SecretServiceDaemon {
    /// SIGTERM and SIGINT stop ``run()`` (within a second).
    public static func installSignalHandlers() { SignalFlag.install() }
}

enum SignalFlag {
    nonisolated(unsafe) static var raised = false

    static func install() {
        signal(SIGTERM) { _ in SignalFlag.raised = true }
        signal(SIGINT) { _ in SignalFlag.raised = true }
        // A parent may have started us with them blocked (a test runner,
        // some session managers): `kill` must still stop the service.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }
}

private func messageHandler(_ m: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
    guard let m, let userdata else { return 0 }
    return Unmanaged<SecretServiceDaemon>.fromOpaque(userdata).takeUnretainedValue().handle(m)
}

private func nameLostHandler(_ m: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
    guard let m, let userdata else { return 0 }
    let d = Unmanaged<SecretServiceDaemon>.fromOpaque(userdata).takeUnretainedValue()
    if let args = try? DBusReader.readAll(m), args.first?.string == SecretServiceDaemon.busName {
        d.stopReason = "another Secret Service took the name \(SecretServiceDaemon.busName)"
    }
    return 0
}

private func ownerChangedHandler(_ m: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
    guard let m, let userdata else { return 0 }
    let d = Unmanaged<SecretServiceDaemon>.fromOpaque(userdata).takeUnretainedValue()
    // A client that left: its sessions end (the specification ties a
    // session to its caller's connection).
    if let args = try? DBusReader.readAll(m), args.count == 3, let name = args[0].string, name.hasPrefix(":"), args[2].string == "" {
        d.clientLeft(name)
    }
    return 0
}
