import CofferKit
import Foundation

extension SecretServiceDaemon {
    /// The properties of `object` under `interface`, in order; only the
    /// one named `only` when given (a collection's `Locked` or `Label`,
    /// which clients ask before every call, then costs nothing per item).
    func properties(of object: Object, interface: String, only: String? = nil) throws(DBusErrorReply) -> [(String, DBusValue)] {
        switch (object, interface) {
        case (.service, Self.serviceInterface):
            return [("Collections", .paths(try collections().map { Self.path(of: $0) }))]
        case (.collection(let c, _), Self.collectionInterface):
            var out: [(String, DBusValue)] = []
            let wanted = { (name: String) in only == nil || only == name }
            if wanted("Items") || wanted("Modified") {
                let items = try self.items(of: c)
                if wanted("Items") { out.append(("Items", .paths(items.map { Self.path(of: $0.id, in: c) }))) }
                if wanted("Modified") { out.append(("Modified", .uint64(Self.seconds(items.map(\.modified).max() ?? c.created)))) }
            }
            if wanted("Label") { out.append(("Label", .string(c.label))) }
            if wanted("Locked") { out.append(("Locked", .boolean(unlockedVault == nil))) }
            if wanted("Created") { out.append(("Created", .uint64(Self.seconds(c.created)))) }
            return out
        case (.item(_, let item), Self.itemInterface):
            let v = try requireVault()
            let e = v.secretServiceEntry(item)
            return [
                ("Locked", .boolean(false)), ("Attributes", .stringDict(e.attributes)), ("Label", .string(e.label)),
                ("Created", .uint64(Self.seconds(e.created))), ("Modified", .uint64(Self.seconds(e.modified))),
            ]
        case (.session, Self.sessionInterface), (.prompt, Self.promptInterface):
            return []
        default:
            throw .invalidArgs("\(interface) is not an interface of this object")
        }
    }

    static func seconds(_ d: Date) -> UInt64 { UInt64(max(0, d.timeIntervalSince1970)) }

    func properties(_ call: DBusCall, _ object: Object, peer: Peer) throws(DBusErrorReply) -> [DBusValue] {
        switch call.member {
        case "Get":
            try expect(call, "ss")
            let name = call.arguments[1].string ?? ""
            guard let value = try properties(of: object, interface: call.arguments[0].string ?? "", only: name).first(where: { $0.0 == name }) else {
                throw .invalidArgs("no property \(name)")
            }
            return [.variant(value.1)]
        case "GetAll":
            try expect(call, "s")
            return [.properties(try properties(of: object, interface: call.arguments[0].string ?? ""))]
        case "Set":
            try expect(call, "ssv")
            let interface = call.arguments[0].string ?? ""
            let name = call.arguments[1].string ?? ""
            let value = call.arguments[2].unwrapped
            let v = try requireVault()
            switch (object, interface, name) {
            case (.item(let c, let item), Self.itemInterface, "Label"):
                guard case .string(let label) = value else { throw .invalidArgs("Label is a string") }
                index?.written(try wrap { () throws(CofferError) in try v.updateSecretServiceItem(item, label: label) }, in: c)
                log?("\(peer.program) relabelled \(item.name)")
                bus.emit(path: Self.path(of: c), interface: Self.collectionInterface, member: "ItemChanged", [.objectPath(Self.path(of: item.id, in: c))])
            case (.item(let c, let item), Self.itemInterface, "Attributes"):
                guard let attributes = value.stringDictionary else { throw .invalidArgs("Attributes is a{ss}") }
                index?.written(try wrap { () throws(CofferError) in try v.updateSecretServiceItem(item, attributes: attributes) }, in: c)
                log?("\(peer.program) changed the attributes of \(item.name)")
                bus.emit(path: Self.path(of: c), interface: Self.collectionInterface, member: "ItemChanged", [.objectPath(Self.path(of: item.id, in: c))])
            case (.collection(let c, _), Self.collectionInterface, "Label"):
                guard case .string(let label) = value else { throw .invalidArgs("Label is a string") }
                try wrap { () throws(CofferError) in try v.relabelSecretServiceCollection(c.id, label: label) }
                index?.invalidate()
                bus.emit(path: Self.root, interface: Self.serviceInterface, member: "CollectionChanged", [.objectPath(Self.path(of: c))])
            default:
                throw .invalidArgs("the property \(interface).\(name) cannot be set")
            }
            return []
        default:
            throw .unknownMethod("org.freedesktop.DBus.Properties has no method \(call.member)")
        }
    }

    // MARK: Introspection

    func introspect(_ object: Object) throws(DBusErrorReply) -> String {
        var interfaces = [Self.introspectable, Self.propertiesXML]
        var children: [String] = []
        switch object {
        case .service:
            interfaces.append(Self.serviceXML)
            children = ["collection", "aliases", "session"]
        case .collection(let c, _):
            interfaces.append(Self.collectionXML)
            children = (try? items(of: c).map(\.id.hex)) ?? []
        case .item:
            interfaces.append(Self.itemXML)
        case .session:
            interfaces.append(Self.sessionXML)
        case .prompt:
            interfaces.append(Self.promptXML)
        case .node(let names):
            interfaces = [Self.introspectable]
            children = names
        }
        return """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node>
            \(interfaces.joined(separator: "\n"))
            \(children.map { "<node name=\"\($0)\"/>" }.joined(separator: "\n"))
            </node>
            """
    }

    static let introspectable = """
        <interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect"><arg name="xml" type="s" direction="out"/></method></interface>
        """
    static let propertiesXML = """
        <interface name="org.freedesktop.DBus.Properties">
        <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
        <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
        <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
        <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
        </interface>
        """
    static let serviceXML = """
        <interface name="org.freedesktop.Secret.Service">
        <method name="OpenSession"><arg name="algorithm" type="s" direction="in"/><arg name="input" type="v" direction="in"/><arg name="output" type="v" direction="out"/><arg name="result" type="o" direction="out"/></method>
        <method name="CreateCollection"><arg name="properties" type="a{sv}" direction="in"/><arg name="alias" type="s" direction="in"/><arg name="collection" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
        <method name="SearchItems"><arg name="attributes" type="a{ss}" direction="in"/><arg name="unlocked" type="ao" direction="out"/><arg name="locked" type="ao" direction="out"/></method>
        <method name="Unlock"><arg name="objects" type="ao" direction="in"/><arg name="unlocked" type="ao" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
        <method name="Lock"><arg name="objects" type="ao" direction="in"/><arg name="locked" type="ao" direction="out"/><arg name="Prompt" type="o" direction="out"/></method>
        <method name="GetSecrets"><arg name="items" type="ao" direction="in"/><arg name="session" type="o" direction="in"/><arg name="secrets" type="a{o(oayays)}" direction="out"/></method>
        <method name="ReadAlias"><arg name="name" type="s" direction="in"/><arg name="collection" type="o" direction="out"/></method>
        <method name="SetAlias"><arg name="name" type="s" direction="in"/><arg name="collection" type="o" direction="in"/></method>
        <property name="Collections" type="ao" access="read"/>
        <signal name="CollectionCreated"><arg name="collection" type="o"/></signal>
        <signal name="CollectionDeleted"><arg name="collection" type="o"/></signal>
        <signal name="CollectionChanged"><arg name="collection" type="o"/></signal>
        </interface>
        """
    static let collectionXML = """
        <interface name="org.freedesktop.Secret.Collection">
        <method name="Delete"><arg name="prompt" type="o" direction="out"/></method>
        <method name="SearchItems"><arg name="attributes" type="a{ss}" direction="in"/><arg name="results" type="ao" direction="out"/></method>
        <method name="CreateItem"><arg name="properties" type="a{sv}" direction="in"/><arg name="secret" type="(oayays)" direction="in"/><arg name="replace" type="b" direction="in"/><arg name="item" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
        <property name="Items" type="ao" access="read"/>
        <property name="Label" type="s" access="readwrite"/>
        <property name="Locked" type="b" access="read"/>
        <property name="Created" type="t" access="read"/>
        <property name="Modified" type="t" access="read"/>
        <signal name="ItemCreated"><arg name="item" type="o"/></signal>
        <signal name="ItemDeleted"><arg name="item" type="o"/></signal>
        <signal name="ItemChanged"><arg name="item" type="o"/></signal>
        </interface>
        """
    static let itemXML = """
        <interface name="org.freedesktop.Secret.Item">
        <method name="Delete"><arg name="Prompt" type="o" direction="out"/></method>
        <method name="GetSecret"><arg name="session" type="o" direction="in"/><arg name="secret" type="(oayays)" direction="out"/></method>
        <method name="SetSecret"><arg name="secret" type="(oayays)" direction="in"/></method>
        <property name="Locked" type="b" access="read"/>
        <property name="Attributes" type="a{ss}" access="readwrite"/>
        <property name="Label" type="s" access="readwrite"/>
        <property name="Created" type="t" access="read"/>
        <property name="Modified" type="t" access="read"/>
        </interface>
        """
    static let promptXML = """
        <interface name="org.freedesktop.Secret.Prompt">
        <method name="Prompt"><arg name="window-id" type="s" direction="in"/></method>
        <method name="Dismiss"/>
        <signal name="Completed"><arg name="dismissed" type="b"/><arg name="result" type="v"/></signal>
        </interface>
        """
    static let sessionXML = """
        <interface name="org.freedesktop.Secret.Session"><method name="Close"/></interface>
        """
}
