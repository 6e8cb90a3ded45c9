#if Redis
import NIOCore

/// Writes commands as RESP arrays of blob strings, the form every Redis version accepts.
enum RESPEncoder {
    static func encode(_ command: String, _ arguments: [RedisArgument], into buffer: inout ByteBuffer) {
        buffer.writeString("*\(arguments.count + 1)\r\n")
        let name = Array(command.utf8)
        buffer.writeString("$\(name.count)\r\n")
        buffer.writeBytes(name)
        buffer.writeString("\r\n")
        for argument in arguments {
            buffer.writeString("$\(argument.bytes.count)\r\n")
            buffer.writeBytes(argument.bytes)
            buffer.writeString("\r\n")
        }
    }

    static func encodedLength(_ command: String, _ arguments: [RedisArgument]) -> Int {
        arguments.reduce(command.utf8.count + 32) { $0 + $1.bytes.count + 16 }
    }
}
#endif
