import CofferCrypto
import CofferKit
import Foundation

/// A session a client opened: how secrets travel between it and the
/// service.
struct ServiceSession {
    enum Cipher {
        /// `plain`: secrets as they are.
        case plain
        /// `dh-ietf1024-sha256-aes128-cbc-pkcs7`: AES-128-CBC under the
        /// key both sides derived.
        case aes(SecretBytes)
    }
    /// The unique bus name of the client that opened it.
    var owner: String
    var cipher: Cipher
}

extension SecretServiceDaemon {
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let sessionInterface = "org.freedesktop.Secret.Session"

    func clientLeft(_ name: String) {
        peers[name] = nil
        for (path, s) in sessions where s.owner == name { sessions[path] = nil }
    }

    // MARK: Methods

    func method(_ call: DBusCall, _ object: Object, peer: Peer) throws(DBusErrorReply) -> [DBusValue] {
        switch (object, call.interface, call.member) {
        case (.service, Self.serviceInterface, "OpenSession"):
            try expect(call, "sv")
            let opened = try openSession(algorithm: call.arguments[0].string ?? "", input: call.arguments[1].unwrapped, owner: call.sender)
            log?("\(peer.program) opened a \(call.arguments[0].string ?? "") session")
            return opened
        case (.service, Self.serviceInterface, "SearchItems"):
            try expect(call, "a{ss}")
            guard let query = call.arguments[0].stringDictionary else { throw .invalidArgs("attributes given twice") }
            // Filtered before anything is built per item: a lookup walks
            // every item of every collection.
            var found: [String] = []
            if let index, unlockedVault != nil {
                let byCollection = try wrap { () throws(CofferError) in try index.items() }
                for c in try collections() {
                    for item in byCollection[c.id] ?? [] where item.matches(query) { found.append(Self.path(of: item.id, in: c)) }
                }
            }
            return [.paths(found), .paths([])]
        case (.service, Self.serviceInterface, "GetSecrets"):
            try expect(call, "aoo")
            let paths = call.arguments[0].pathArray ?? []
            let session = try session(call.arguments[1].objectPath ?? "", caller: call.sender)
            var out: [DBusValue] = []
            for p in paths {
                guard case .item(_, let item) = try resolve(p) else { throw .noSuchObject("\(p) is not an item") }
                out.append(.dictEntry(.objectPath(p), try secretValue(item, session: session.path, peer: peer)))
            }
            return [.array("{o(oayays)}", out)]
        case (.service, Self.serviceInterface, "Unlock"):
            try expect(call, "ao")
            return try unlock(call.arguments[0].pathArray ?? [], caller: call.sender)
        case (.service, Self.serviceInterface, "Lock"):
            try expect(call, "ao")
            return try lock(call.arguments[0].pathArray ?? [], peer: peer)
        case (.service, Self.serviceInterface, "ReadAlias"):
            try expect(call, "s")
            let c = try collection(alias: call.arguments[0].string ?? "")
            return [.objectPath(c.map { Self.path(of: $0) } ?? "/")]
        case (.service, Self.serviceInterface, "SetAlias"):
            try expect(call, "so")
            let alias = call.arguments[0].string ?? ""
            guard !alias.isEmpty, alias.utf8.count <= 64, alias.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
                throw .invalidArgs("an alias is 1 to 64 ASCII letters, digits or '_'")
            }
            let target = call.arguments[1].objectPath ?? "/"
            var id: String?
            if target != "/" {
                guard case .collection(let c, _) = try resolve(target) else { throw .noSuchObject("\(target) is not a collection") }
                id = c.id
            }
            let v = try requireVault()
            try wrap { () throws(CofferError) in try v.setSecretServiceAlias(alias, to: id) }
            index?.invalidate()
            log?("\(peer.program) set alias \(alias) to \(id ?? "nothing")")
            return []
        case (.service, Self.serviceInterface, "CreateCollection"):
            try expect(call, "a{sv}s")
            let props = call.arguments[0].variantDictionary ?? [:]
            let alias = call.arguments[1].string ?? ""
            if !alias.isEmpty, let existing = try collection(alias: alias) {
                return [.objectPath(Self.path(of: existing)), .objectPath("/")]
            }
            let label = props[Self.collectionInterface + ".Label"]?.string ?? "Collection"
            let v = try requireVault()
            let c = try wrap { () throws(CofferError) in try v.createSecretServiceCollection(label: label) }
            if !alias.isEmpty { try wrap { () throws(CofferError) in try v.setSecretServiceAlias(alias, to: c.id) } }
            index?.invalidate()
            log?("\(peer.program) created collection \(c.folder)/")
            bus.emit(path: Self.root, interface: Self.serviceInterface, member: "CollectionCreated", [.objectPath(Self.path(of: c))])
            return [.objectPath(Self.path(of: c)), .objectPath("/")]

        case (.collection(let c, _), Self.collectionInterface, "SearchItems"):
            try expect(call, "a{ss}")
            guard let query = call.arguments[0].stringDictionary else { throw .invalidArgs("attributes given twice") }
            return [.paths(try items(of: c).filter { $0.matches(query) }.map { Self.path(of: $0.id, in: c) })]
        case (.collection(let c, _), Self.collectionInterface, "CreateItem"):
            try expect(call, "a{sv}(oayays)b")
            return try createItem(
                in: c, properties: call.arguments[0], secret: call.arguments[1], replace: call.arguments[2].boolValue ?? false, caller: call.sender, peer: peer)
        case (.collection(let c, _), Self.collectionInterface, "Delete"):
            try expect(call, "")
            let v = try requireVault()
            let doomed = try items(of: c)
            for i in doomed {
                try wrap { () throws(CofferError) in try v.delete("id:" + i.id.hex) }
                index?.deleted(i.id)
            }
            try wrap { () throws(CofferError) in try v.removeSecretServiceCollection(c.id) }
            index?.invalidate()
            log?("\(peer.program) deleted collection \(c.folder)/ and its \(doomed.count) items")
            bus.emit(path: Self.root, interface: Self.serviceInterface, member: "CollectionDeleted", [.objectPath(Self.path(of: c))])
            return [.objectPath("/")]

        case (.item(_, let item), Self.itemInterface, "GetSecret"):
            try expect(call, "o")
            let session = try session(call.arguments[0].objectPath ?? "", caller: call.sender)
            return [try secretValue(item, session: session.path, peer: peer)]
        case (.item(let c, let item), Self.itemInterface, "SetSecret"):
            try expect(call, "(oayays)")
            let secret = try decodeSecret(call.arguments[0], caller: call.sender)
            let v = try requireVault()
            index?.written(try wrap { () throws(CofferError) in try v.updateSecretServiceItem(item, secret: secret) }, in: c)
            log?("\(peer.program) changed the secret of \(item.name)")
            bus.emit(path: Self.path(of: c), interface: Self.collectionInterface, member: "ItemChanged", [.objectPath(Self.path(of: item.id, in: c))])
            return []
        case (.item(let c, let item), Self.itemInterface, "Delete"):
            try expect(call, "")
            let v = try requireVault()
            try wrap { () throws(CofferError) in try v.delete("id:" + item.id.hex) }
            index?.deleted(item.id)
            log?("\(peer.program) deleted \(item.name)")
            bus.emit(path: Self.path(of: c), interface: Self.collectionInterface, member: "ItemDeleted", [.objectPath(Self.path(of: item.id, in: c))])
            return [.objectPath("/")]

        case (.session(let path), Self.sessionInterface, "Close"):
            try expect(call, "")
            guard sessions[path]?.owner == call.sender else { throw .noSession("\(path) is not a session of this client") }
            sessions[path] = nil
            return []
        default:
            throw .unknownMethod("\(call.path) has no method \(call.interface).\(call.member)")
        }
    }

    // MARK: Sessions and secrets

    struct OpenedSession {
        var path: String
        var session: ServiceSession
    }

    func session(_ path: String, caller: String) throws(DBusErrorReply) -> OpenedSession {
        guard let s = sessions[path], s.owner == caller else { throw .noSession("\(path) is not an open session of this client") }
        return OpenedSession(path: path, session: s)
    }

    func openSession(algorithm: String, input: DBusValue, owner: String) throws(DBusErrorReply) -> [DBusValue] {
        guard sessions.count < 1024 else { throw .failed("too many open sessions") }
        let path = Self.sessionPrefix + "s\(nextSession)"
        switch algorithm {
        case "plain":
            nextSession += 1
            sessions[path] = ServiceSession(owner: owner, cipher: .plain)
            return [.variant(.string("")), .objectPath(path)]
        case SecretServiceDH.algorithm:
            guard case .bytes(let clientPublic) = input else { throw .invalidArgs("the input of \(algorithm) is the client's public key (ay)") }
            let agreement: SecretServiceDH.Agreement
            do {
                agreement = try SecretServiceDH.agree(clientPublic: clientPublic)
            } catch {
                throw .invalidArgs(error.description)
            }
            nextSession += 1
            sessions[path] = ServiceSession(owner: owner, cipher: .aes(agreement.key))
            return [.variant(.bytes(agreement.publicKey)), .objectPath(path)]
        default:
            throw .notSupported("the algorithm '\(algorithm)' is not supported; use plain or dh-ietf1024-sha256-aes128-cbc-pkcs7")
        }
    }

    /// The `(oayays)` of an item for a session.
    func secretValue(_ item: Item, session path: String, peer: Peer) throws(DBusErrorReply) -> DBusValue {
        guard let s = sessions[path] else { throw .noSession("\(path) is not an open session") }
        let v = try requireVault()
        let secret = v.secretServiceSecret(item)
        log?("\(peer.program) read \(item.name)")
        switch s.cipher {
        case .plain:
            return .structure([.objectPath(path), .bytes([]), .bytes(secret.bytes), .string(secret.contentType)])
        case .aes(let key):
            do {
                let sealed = try SecretServiceDH.encrypt(secret.bytes, key: key)
                return .structure([.objectPath(path), .bytes(sealed.iv), .bytes(sealed.ciphertext), .string(secret.contentType)])
            } catch {
                throw .failed(error.description)
            }
        }
    }

    /// A `(oayays)` from a client, decrypted.
    func decodeSecret(_ value: DBusValue, caller: String) throws(DBusErrorReply) -> SecretServiceSecret {
        guard case .structure(let f) = value, f.count == 4, let path = f[0].objectPath, case .bytes(let parameters) = f[1],
            case .bytes(let bytes) = f[2], let contentType = f[3].string
        else { throw .invalidArgs("a secret is (oayays)") }
        let s = try session(path, caller: caller)
        switch s.session.cipher {
        case .plain:
            guard parameters.isEmpty else { throw .invalidArgs("a plain session's secret has no parameters") }
            return SecretServiceSecret(bytes: bytes, contentType: contentType)
        case .aes(let key):
            do {
                return SecretServiceSecret(bytes: try SecretServiceDH.decrypt(bytes, iv: parameters, key: key), contentType: contentType)
            } catch {
                throw .invalidArgs(error.description)
            }
        }
    }

    func createItem(in c: SecretServiceCollection, properties: DBusValue, secret: DBusValue, replace: Bool, caller: String, peer: Peer)
        throws(DBusErrorReply) -> [DBusValue]
    {
        guard let props = properties.variantDictionary else { throw .invalidArgs("properties are a{sv}") }
        var attributes: [String: String] = [:]
        if let a = props[Self.itemInterface + ".Attributes"] {
            guard let d = a.stringDictionary else { throw .invalidArgs("\(Self.itemInterface).Attributes is a{ss}") }
            attributes = d
        }
        var label = "Untitled"
        if let l = props[Self.itemInterface + ".Label"] {
            guard case .string(let s) = l else { throw .invalidArgs("\(Self.itemInterface).Label is a string") }
            label = s
        }
        let decoded = try decodeSecret(secret, caller: caller)
        guard unlockedVault != nil else {
            // A locked collection: the item is created once a prompt has
            // unlocked the vault.
            let prompt = try makePrompt(
                .createItem(collection: c.id, label: label, attributes: attributes, secret: decoded, replace: replace), owner: caller)
            return [.objectPath("/"), .objectPath(prompt)]
        }
        return [
            .objectPath(try storeItem(in: c, label: label, attributes: attributes, secret: decoded, replace: replace, program: peer.program)), .objectPath("/"),
        ]
    }

    /// Creates the item (or, with `replace`, updates the one with the same
    /// attributes) and returns its path.
    func storeItem(in c: SecretServiceCollection, label: String, attributes: [String: String], secret: SecretServiceSecret, replace: Bool, program: String)
        throws(DBusErrorReply) -> String
    {
        let v = try requireVault()
        if replace, let existing = try items(of: c).first(where: { $0.attributes == attributes }) {
            let item = try wrap { () throws(CofferError) in try v.item(named: "id:" + existing.id.hex) }
            let updated = try wrap { () throws(CofferError) in try v.updateSecretServiceItem(item, label: label, secret: secret) }
            index?.written(updated, in: c)
            log?("\(program) replaced \(updated.name)")
            bus.emit(path: Self.path(of: c), interface: Self.collectionInterface, member: "ItemChanged", [.objectPath(Self.path(of: updated.id, in: c))])
            return Self.path(of: updated.id, in: c)
        }
        let item = try wrap { () throws(CofferError) in try v.createSecretServiceItem(in: c, label: label, attributes: attributes, secret: secret) }
        index?.written(item, in: c)
        log?("\(program) created \(item.name)")
        bus.emit(path: Self.path(of: c), interface: Self.collectionInterface, member: "ItemCreated", [.objectPath(Self.path(of: item.id, in: c))])
        return Self.path(of: item.id, in: c)
    }

    // MARK: Locking

    func unlock(_ paths: [String], caller: String) throws(DBusErrorReply) -> [DBusValue] {
        guard unlockedVault != nil else {
            return [.paths([]), .objectPath(try makePrompt(.unlock(paths), owner: caller))]
        }
        return [.paths(paths), .objectPath("/")]
    }

    func lock(_ paths: [String], peer: Peer) throws(DBusErrorReply) -> [DBusValue] {
        lockVault("\(peer.program) asked to lock")
        return [.paths(paths), .objectPath("/")]
    }
}
