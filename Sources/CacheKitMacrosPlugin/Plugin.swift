#if Macros
import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that provides CacheKitMacros' macros.
@main
struct CacheKitMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [MemoizedMacro.self]
}
#else
/// Without the Macros trait the plugin provides no macros (and CacheKitMacros declares none), so
/// that building the package with its default traits never builds swift-syntax.
@main
struct CacheKitMacrosPlugin {
    static func main() {}
}
#endif
