/// Builds `org.freedesktop.DBus.Introspectable` XML for one path.
enum DBusIntrospection {
    static let doctype =
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
        + " \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"

    /// The XML for a node with the given interfaces and direct children.
    static func xml(interfaces: [DBusInterface], children: [String], isObjectManager: Bool) -> String {
        var out = doctype + "<node>\n"
        out += standardInterfaces(hasProperties: !interfaces.isEmpty, isObjectManager: isObjectManager)
        for interface in interfaces {
            out += "  <interface name=\"\(escape(interface.name))\">\n"
            for method in interface.methods {
                out += "    <method name=\"\(escape(method.name))\">\n"
                for argument in method.inputs { out += argumentXML(argument, direction: "in") }
                for argument in method.outputs { out += argumentXML(argument, direction: "out") }
                out += "    </method>\n"
            }
            for signal in interface.signals {
                out += "    <signal name=\"\(escape(signal.name))\">\n"
                for argument in signal.arguments { out += argumentXML(argument, direction: nil) }
                out += "    </signal>\n"
            }
            for property in interface.properties {
                let access = switch property.access {
                case .read: "read"
                case .readWrite: "readwrite"
                case .write: "write"
                }
                out += "    <property name=\"\(escape(property.name))\" type=\"\(escape(property.type.signature))\" access=\"\(access)\"/>\n"
            }
            out += "  </interface>\n"
        }
        for child in children { out += "  <node name=\"\(escape(child))\"/>\n" }
        return out + "</node>\n"
    }

    private static func argumentXML(_ argument: DBusArgument, direction: String?) -> String {
        let dir = direction.map { " direction=\"\($0)\"" } ?? ""
        return "      <arg name=\"\(escape(argument.name))\" type=\"\(escape(argument.type.signature))\"\(dir)/>\n"
    }

    private static func standardInterfaces(hasProperties: Bool, isObjectManager: Bool) -> String {
        var out = """
              <interface name="org.freedesktop.DBus.Introspectable">
                <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
              </interface>
              <interface name="org.freedesktop.DBus.Peer">
                <method name="Ping"/>
                <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
              </interface>

            """
        if hasProperties {
            out += """
                  <interface name="org.freedesktop.DBus.Properties">
                    <method name="Get"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
                    <method name="GetAll"><arg name="interface_name" type="s" direction="in"/><arg name="props" type="a{sv}" direction="out"/></method>
                    <method name="Set"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
                    <signal name="PropertiesChanged"><arg name="interface_name" type="s"/><arg name="changed_properties" type="a{sv}"/><arg name="invalidated_properties" type="as"/></signal>
                  </interface>

                """
        }
        if isObjectManager {
            out += """
                  <interface name="org.freedesktop.DBus.ObjectManager">
                    <method name="GetManagedObjects"><arg name="objects" type="a{oa{sa{sv}}}" direction="out"/></method>
                    <signal name="InterfacesAdded"><arg name="object" type="o"/><arg name="interfaces" type="a{sa{sv}}"/></signal>
                    <signal name="InterfacesRemoved"><arg name="object" type="o"/><arg name="interfaces" type="as"/></signal>
                  </interface>

                """
        }
        return out
    }

    /// Escapes text for an XML attribute. Names are validated already; argument names are free text.
    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }
}
