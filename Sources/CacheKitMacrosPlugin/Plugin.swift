import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that provides CacheKitMacros' macros.
@main
struct CacheKitMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [MemoizedMacro.self]
}
