internal import CDBus

/// A libdbus `DBusMessage*` that this module owns one reference to.
struct RawMessage: @unchecked Sendable {
    let pointer: OpaquePointer
}

extension DBusMessage {
    /// Validates every header and body value, then builds the libdbus message.
    /// The caller owns the returned reference and must `dbus_message_unref` it.
    /// - Throws: ``DBusError`` before libdbus sees anything it would abort on.
    func makeRaw() throws(DBusError) -> OpaquePointer {
        try validate()
        guard let message = dbus_message_new(Int32(kindCode)) else { throw DBusError(.noMemory, "out of memory") }
        var ok = true
        if let path { ok = ok && dbus_message_set_path(message, path.rawValue) != 0 }
        if let interface { ok = ok && dbus_message_set_interface(message, interface) != 0 }
        if let member { ok = ok && dbus_message_set_member(message, member) != 0 }
        if let errorName { ok = ok && dbus_message_set_error_name(message, errorName) != 0 }
        if let destination { ok = ok && dbus_message_set_destination(message, destination) != 0 }
        if replySerial != 0 { ok = ok && dbus_message_set_reply_serial(message, replySerial) != 0 }
        dbus_message_set_no_reply(message, noReplyExpected ? 1 : 0)
        dbus_message_set_auto_start(message, autoStart ? 1 : 0)
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in body { ok = ok && Self.append(value, to: &iter) }
        guard ok else {
            dbus_message_unref(message)
            throw DBusError(.noMemory, "out of memory while building \(what)")
        }
        return message
    }

    /// Reads a message libdbus received. The message stays owned by the caller.
    /// - Parameter maximumValues: how many values (each array element, dictionary entry,
    ///   structure field and variant counts) are unpacked at most; a message with more is
    ///   refused before its arrays are unpacked, so its cost stays in proportion to its size.
    init(raw message: OpaquePointer, maximumValues: Int = DBusMessage.maximumReceivedValues) throws(DBusError) {
        self.init(header: message)
        let signature = try DBusSignature(String(cString: dbus_message_get_signature(message)))
        var iter = DBusMessageIter()
        var values: [DBusValue] = []
        values.reserveCapacity(signature.types.count)
        var budget = maximumValues
        if dbus_message_iter_init(message, &iter) != 0 {
            for type in signature.types {
                values.append(try Self.read(type, from: &iter, budget: &budget, limit: maximumValues))
                dbus_message_iter_next(&iter)
            }
        }
        body = values
    }

    /// Reads a received message's header only: its body stays empty. What a method call asks
    /// for is checked on this before any argument is unpacked.
    init(header message: OpaquePointer) {
        kind = switch dbus_message_get_type(message) {
        case Int32(DBUS_MESSAGE_TYPE_METHOD_CALL): .methodCall
        case Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN): .methodReturn
        case Int32(DBUS_MESSAGE_TYPE_ERROR): .error
        default: .signal
        }
        path = dbus_message_get_path(message).map { DBusObjectPath(unchecked: String(cString: $0)) }
        interface = dbus_message_get_interface(message).map { String(cString: $0) }
        member = dbus_message_get_member(message).map { String(cString: $0) }
        errorName = dbus_message_get_error_name(message).map { String(cString: $0) }
        destination = dbus_message_get_destination(message).map { String(cString: $0) }
        sender = dbus_message_get_sender(message).map { String(cString: $0) }
        serial = dbus_message_get_serial(message)
        replySerial = dbus_message_get_reply_serial(message)
        noReplyExpected = dbus_message_get_no_reply(message) != 0
        autoStart = dbus_message_get_auto_start(message) != 0
        body = []
    }

    /// The body's signature as libdbus received it, read without unpacking anything.
    static func rawSignature(_ message: OpaquePointer) -> String {
        String(cString: dbus_message_get_signature(message))
    }

    /// Reads a message in D-Bus wire format, as libdbus would receive it from a socket.
    /// - Parameters:
    ///   - wireBytes: One whole message: header, fields and body.
    ///   - maximumValues: The value budget it is unpacked against (``maximumReceivedValues``).
    /// - Throws: ``DBusError`` when libdbus refuses the bytes, when a value in them is one this
    ///   library does not represent, or (`limitsExceeded`) when they hold more values.
    public init(wireBytes: [UInt8], maximumValues: Int = DBusMessage.maximumReceivedValues) throws(DBusError) {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        let raw = wireBytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    dbus_message_demarshal($0, Int32(clamping: buffer.count), &error)
                }
            }
        }
        guard let raw else {
            let reason = dbus_error_is_set(&error) != 0 ? String(cString: error.message) : "no bytes"
            dbus_error_free(&error)
            throw DBusError(.invalidArgs, "not a D-Bus message: \(reason)")
        }
        defer { dbus_message_unref(raw) }
        try self.init(raw: raw, maximumValues: maximumValues)
    }

    /// The message in D-Bus wire format (little-endian), as libdbus would send it.
    /// - Throws: ``DBusError`` for what ``DBusConnection`` would refuse to send.
    public func wireBytes() throws(DBusError) -> [UInt8] {
        let raw = try makeRaw()
        defer { dbus_message_unref(raw) }
        if serial != 0 { dbus_message_set_serial(raw, serial) }
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(raw, &buffer, &length) != 0, let buffer else {
            throw DBusError(.noMemory, "out of memory while marshalling \(what)")
        }
        defer { dbus_free(buffer) }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) { Array(UnsafeBufferPointer(start: $0, count: Int(length))) }
    }

    private var kindCode: Int32 {
        switch kind {
        case .methodCall: Int32(DBUS_MESSAGE_TYPE_METHOD_CALL)
        case .methodReturn: Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN)
        case .error: Int32(DBUS_MESSAGE_TYPE_ERROR)
        case .signal: Int32(DBUS_MESSAGE_TYPE_SIGNAL)
        }
    }

    /// Every check libdbus would otherwise make fatally.
    private func validate() throws(DBusError) {
        switch kind {
        case .methodCall:
            guard path != nil, member != nil else { throw .invalidArgs("a method call needs a path and a member") }
        case .signal:
            guard path != nil, interface != nil, member != nil else {
                throw .invalidArgs("a signal needs a path, an interface and a member")
            }
        case .error:
            guard errorName != nil else { throw .invalidArgs("an error reply needs an error name") }
        case .methodReturn:
            break
        }
        if let interface { try DBusName.validateInterface(interface) }
        if let member { try DBusName.validateMember(member) }
        if let errorName { try DBusName.validateErrorName(errorName) }
        if let destination { try DBusName.validateBusName(destination) }
        if body.count > DBusSignature.maximumLength {
            throw .invalidArgs("\(what) has \(body.count) arguments; a signature allows at most 255")
        }
        var length = 0
        for value in body {
            try value.validate()
            length += value.type.signature.utf8.count
        }
        guard length <= DBusSignature.maximumLength else {
            throw .invalidArgs("\(what) has a body signature of \(length) bytes; the limit is 255")
        }
    }

    // MARK: Writing

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(var v): return dbus_message_iter_append_basic(&iter, DBusTypeCode.byte, &v) != 0
        case .boolean(let b):
            var v: dbus_bool_t = b ? 1 : 0
            return dbus_message_iter_append_basic(&iter, DBusTypeCode.boolean, &v) != 0
        case .int16(var v): return dbus_message_iter_append_basic(&iter, DBusTypeCode.int16, &v) != 0
        case .uint16(var v): return dbus_message_iter_append_basic(&iter, DBusTypeCode.uint16, &v) != 0
        case .int32(var v): return dbus_message_iter_append_basic(&iter, DBusTypeCode.int32, &v) != 0
        case .uint32(var v): return dbus_message_iter_append_basic(&iter, DBusTypeCode.uint32, &v) != 0
        case .int64(var v): return dbus_message_iter_append_basic(&iter, DBusTypeCode.int64, &v) != 0
        case .uint64(var v): return dbus_message_iter_append_basic(&iter, DBusTypeCode.uint64, &v) != 0
        case .double(var v): return dbus_message_iter_append_basic(&iter, DBusTypeCode.double, &v) != 0
        case .string(let s): return appendString(s, code: DBusTypeCode.string, to: &iter)
        case .objectPath(let p): return appendString(p.rawValue, code: DBusTypeCode.objectPath, to: &iter)
        case .signature(let g): return appendString(g.text, code: DBusTypeCode.signature, to: &iter)
        case .unixFD(let descriptor):
            var fd = descriptor.fd
            return dbus_message_iter_append_basic(&iter, DBusTypeCode.unixFD, &fd) != 0
        case .array(let element, let items):
            return container(DBusTypeCode.array, element.signature, in: &iter) { sub in
                items.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let key, let valueType, let entries):
            return container(DBusTypeCode.array, "{" + key.signature + valueType.signature + "}", in: &iter) { sub in
                entries.allSatisfy { entry in
                    container(DBusTypeCode.dictEntry, nil, in: &sub) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return container(DBusTypeCode.structure, nil, in: &iter) { sub in
                fields.allSatisfy { append($0, to: &sub) }
            }
        case .variant(let inner):
            return container(DBusTypeCode.variant, inner.type.signature, in: &iter) { sub in
                append(inner, to: &sub)
            }
        }
    }

    private static func appendString(_ text: String, code: Int32, to iter: inout DBusMessageIter) -> Bool {
        text.withCString { characters in
            var pointer: UnsafePointer<CChar>? = characters
            return dbus_message_iter_append_basic(&iter, code, &pointer) != 0
        }
    }

    private static func container(
        _ code: Int32, _ signature: String?, in iter: inout DBusMessageIter,
        _ fill: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool =
            if let signature {
                signature.withCString { dbus_message_iter_open_container(&iter, code, $0, &sub) != 0 }
            } else {
                dbus_message_iter_open_container(&iter, code, nil, &sub) != 0
            }
        guard opened else { return false }
        guard fill(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    // MARK: Reading

    private static func read(_ type: DBusType, from iter: inout DBusMessageIter, budget: inout Int, limit: Int) throws(DBusError) -> DBusValue {
        budget -= 1
        guard budget >= 0 else { throw tooLarge(limit) }
        switch type {
        case .byte: return .byte(basic(&iter, as: UInt8.self))
        case .boolean: return .boolean(basic(&iter, as: dbus_bool_t.self) != 0)
        case .int16: return .int16(basic(&iter, as: Int16.self))
        case .uint16: return .uint16(basic(&iter, as: UInt16.self))
        case .int32: return .int32(basic(&iter, as: Int32.self))
        case .uint32: return .uint32(basic(&iter, as: UInt32.self))
        case .int64: return .int64(basic(&iter, as: Int64.self))
        case .uint64: return .uint64(basic(&iter, as: UInt64.self))
        case .double: return .double(basic(&iter, as: Double.self))
        case .string: return .string(readString(&iter))
        case .objectPath: return .objectPath(DBusObjectPath(unchecked: readString(&iter)))
        case .signature: return .signature(try DBusSignature(readString(&iter)))
        case .unixFD:
            // libdbus hands over a duplicate, the reader's to close (-1 when it has none).
            let fd = basic(&iter, as: Int32.self)
            guard fd >= 0 else { throw .invalidArgs("the message names a file descriptor it does not carry") }
            return .unixFD(DBusFileDescriptor(owning: fd))
        case .array(.byte):
            // Counted and copied in one go: a byte array costs its size, not a value per byte.
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            var pointer: UnsafeMutableRawPointer? = nil
            var count: Int32 = 0
            dbus_message_iter_get_fixed_array(&sub, &pointer, &count)
            budget -= Int(count)
            guard budget >= 0 else { throw tooLarge(limit) }
            let bytes = pointer.map { UnsafeRawBufferPointer(start: $0, count: Int(count)) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
            return .array(.byte, bytes.map { .byte($0) })
        case .array(let element):
            var items: [DBusValue] = []
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            while dbus_message_iter_get_arg_type(&sub) != DBusTypeCode.invalid {
                items.append(try read(element, from: &sub, budget: &budget, limit: limit))
                dbus_message_iter_next(&sub)
            }
            return .array(element, items)
        case .dictionary(let key, let value):
            var entries: [DBusDictEntry] = []
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            while dbus_message_iter_get_arg_type(&sub) == DBusTypeCode.dictEntry {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                let k = try read(key, from: &pair, budget: &budget, limit: limit)
                dbus_message_iter_next(&pair)
                entries.append(DBusDictEntry(k, try read(value, from: &pair, budget: &budget, limit: limit)))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(key: key, value: value, entries)
        case .structure(let fieldTypes):
            var fields: [DBusValue] = []
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            for fieldType in fieldTypes {
                fields.append(try read(fieldType, from: &sub, budget: &budget, limit: limit))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case .variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            guard let raw = dbus_message_iter_get_signature(&sub) else { throw DBusError(.noMemory, "out of memory") }
            let text = String(cString: raw)
            dbus_free(raw)
            let inner = try DBusSignature(text)
            guard inner.types.count == 1 else { throw .invalidArgs("variant holds '\(text)', not one type") }
            return .variant(try read(inner.types[0], from: &sub, budget: &budget, limit: limit))
        }
    }

    private static func tooLarge(_ limit: Int) -> DBusError {
        DBusError(.limitsExceeded, "the message holds more than \(limit) values (each array element counts); none was read")
    }

    private static func basic<T>(_ iter: inout DBusMessageIter, as: T.Type) -> T {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 1) { buffer in
            buffer[0] = 0
            dbus_message_iter_get_basic(&iter, buffer.baseAddress)
            return UnsafeRawPointer(buffer.baseAddress!).load(as: T.self)
        }
    }

    /// Copies a borrowed string out of the message.
    private static func readString(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }
}
