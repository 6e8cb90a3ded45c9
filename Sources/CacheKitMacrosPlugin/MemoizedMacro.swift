#if Macros
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Memoized`: a body macro that routes a function's calls through a `MemoizedFunction`, and a
/// peer macro that adds that `MemoizedFunction` (`_memoized_NAME`) and the function's original
/// body as a private function (`_uncached_NAME`). See the macro's declaration in CacheKitMacros
/// for the user-facing documentation.
///
/// Calling the original body through a private sibling function, rather than inlining it in the
/// closure passed to `MemoizedFunction.call`, keeps the body in its own isolation: an actor's (or
/// a global actor's) method body still runs on its actor when the single-flight task of an
/// `async` call runs it.
public enum MemoizedMacro {}

// MARK: - Peer: the storage and the uncached body

extension MemoizedMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        // Diagnostics are reported here only, not again by the body role.
        guard
            let plan = MemoizationPlan.make(attribute: node, declaration: declaration, context: context, diagnose: true)
        else { return [] }
        return [plan.storageDeclaration, plan.uncachedDeclaration]
    }
}

// MARK: - Body: the call through the cache

extension MemoizedMacro: BodyMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingBodyFor declaration: some DeclSyntaxProtocol & WithOptionalCodeBlockSyntax,
        in context: some MacroExpansionContext
    ) throws -> [CodeBlockItemSyntax] {
        guard
            let plan = MemoizationPlan.make(
                attribute: node,
                declaration: declaration,
                context: context,
                diagnose: false
            )
        else {
            // Invalid use (already diagnosed by the peer role): leave the body as written.
            return declaration.body.map { Array($0.statements) } ?? []
        }
        return [plan.body]
    }
}

// MARK: - The plan both roles share

/// What `@Memoized` makes of one function declaration: validated once, expanded by both roles.
struct MemoizationPlan {
    /// A parameter of the memoized function.
    struct Parameter {
        /// The argument label, `nil` for `_`.
        var label: String?
        /// The name the body uses.
        var name: String
        var syntax: FunctionParameterSyntax
        var isVariadic: Bool { syntax.ellipsis != nil }
        /// `name` as an expression: in backticks when it is a keyword (`func f(in: String)`).
        var reference: String { Self.reservedWords.contains(name) ? "`\(name)`" : name }

        /// The words a parameter may be named by but an expression must put in backticks.
        static let reservedWords: Set<String> = [
            "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init",
            "inout", "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public",
            "rethrows", "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue",
            "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return",
            "throw", "switch", "where", "while", "Any", "as", "await", "false", "is", "nil", "self", "Self",
            "super", "throws", "true", "try",
        ]
    }

    /// Whether `type` contains an opaque type (`some P`) anywhere, `[some P]` included (and
    /// not a type whose name merely ends in "some").
    static func containsOpaqueType(_ type: some SyntaxProtocol) -> Bool {
        type.tokens(viewMode: .sourceAccurate).contains { $0.tokenKind == .keyword(.some) }
    }

    /// Where the `MemoizedFunction` lives.
    enum Storage {
        /// A global `let` (free functions).
        case global
        /// A `static let` (static methods, and methods of structs, enums and extensions).
        case typeProperty
        /// A `let` per instance (instance methods declared in a class or actor).
        case instanceProperty
    }

    var function: FunctionDeclSyntax
    var baseName: String
    var identity: String
    var parameters: [Parameter]
    var keyNames: [String]
    var output: String
    var storage: Storage
    var isInstanceMethod: Bool
    var isAsync: Bool
    var throwsClause: String?
    var initializerArguments: LabeledExprListSyntax

    var storageName: String { "_memoized_\(baseName)" }
    var uncachedName: String { "_uncached_\(baseName)" }

    // MARK: Validation

    static func make(
        attribute: AttributeSyntax,
        declaration: some DeclSyntaxProtocol,
        context: some MacroExpansionContext,
        diagnose: Bool
    ) -> MemoizationPlan? {
        var failed = false
        func error(_ node: some SyntaxProtocol, _ message: String, id: String) {
            failed = true
            if diagnose {
                context.diagnose(Diagnostic(node: Syntax(node), message: MemoizedDiagnostic(message, id: id)))
            }
        }

        guard let function = declaration.as(FunctionDeclSyntax.self) else {
            error(attribute, "@Memoized applies to functions and methods only", id: "notAFunction")
            return nil
        }
        guard function.body != nil else {
            error(attribute, "@Memoized requires a function with a body", id: "noBody")
            return nil
        }
        guard case .identifier = function.name.tokenKind else {
            error(
                function.name,
                "@Memoized cannot memoize an operator; memoize a named function it calls",
                id: "operator"
            )
            return nil
        }
        let baseName = String(function.name.text.filter { $0 != "`" })

        // Where the function is declared.
        let lexicalContext = context.lexicalContext
        let enclosing = lexicalContext.first
        let modifiers = Set(function.modifiers.map(\.name.text))
        let isStatic = modifiers.contains("static") || modifiers.contains("class")
        var typePath: [String] = []
        for node in lexicalContext.reversed() {
            if let decl = node.asProtocol(NamedDeclSyntax.self), node.isProtocol(DeclGroupSyntax.self) {
                typePath.append(decl.name.text)
            } else if let ext = node.as(ExtensionDeclSyntax.self) {
                typePath.append(ext.extendedType.trimmedDescription)
            }
        }
        let storage: Storage
        switch enclosing?.kind {
        case nil:
            storage = .global
        case .classDecl?, .actorDecl?:
            storage = isStatic ? .typeProperty : .instanceProperty
        case .structDecl?, .enumDecl?, .extensionDecl?:
            storage = .typeProperty
        case .protocolDecl?:
            error(attribute, "@Memoized cannot memoize a protocol requirement", id: "protocol")
            return nil
        default:
            error(
                attribute,
                "@Memoized cannot memoize a local function; declare it at file scope or in a type",
                id: "localFunction"
            )
            return nil
        }
        // Any enclosing type, not only the nearest: a type nested in a generic one is generic too.
        if storage == .typeProperty,
            let generics = lexicalContext.lazy.compactMap({
                $0.asProtocol(WithGenericParametersSyntax.self)?.genericParameterClause
            }).first
        {
            error(
                generics,
                "@Memoized stores the cache of this method in a static property, which generic types cannot "
                    + "have; declare the method in a class or actor (whose instances each hold a cache), "
                    + "or outside the generic type",
                id: "genericTypeStatic"
            )
        }

        // The signature.
        if modifiers.contains("mutating") {
            error(
                function.name,
                "@Memoized cannot memoize a mutating method: a cached call would skip its mutation",
                id: "mutating"
            )
        }
        if let generics = function.genericParameterClause {
            error(
                generics,
                "@Memoized cannot memoize a generic function: its cache holds one result type",
                id: "generic"
            )
        }
        let effects = function.signature.effectSpecifiers
        let isAsync = effects?.asyncSpecifier != nil
        let throwsClause = effects?.throwsClause
        if let throwsClause, throwsClause.throwsSpecifier.tokenKind == .keyword(.rethrows) {
            error(throwsClause, "@Memoized cannot memoize a rethrows function", id: "rethrows")
        }
        if isAsync, let throwsClause, throwsClause.type != nil {
            error(
                throwsClause,
                "@Memoized cannot memoize an async function with typed throws: concurrent calls share "
                    + "one run that throws 'any Error'; declare it 'async throws'",
                id: "asyncTypedThrows"
            )
        }
        var output = function.signature.returnClause?.type.trimmed
        if let returnType = function.signature.returnClause?.type, Self.containsOpaqueType(returnType) {
            error(returnType, "@Memoized cannot memoize a function with an opaque result type", id: "opaqueResult")
        }
        // `T!` is no type of its own outside a declaration's result: the stored results and the
        // closure that computes them are `T?` (the function still returns `T!`).
        if let unwrapped = output?.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            output = TypeSyntax(OptionalTypeSyntax(wrappedType: unwrapped.wrappedType.trimmed))
        }
        // In a class or actor, `Self` is the dynamic type, which no stored property can name.
        if let returnType = function.signature.returnClause?.type,
            returnType.tokens(viewMode: .sourceAccurate).contains(where: { $0.tokenKind == .keyword(.Self) }),
            let owner = lexicalContext.first(where: {
                $0.is(ClassDeclSyntax.self) || $0.is(ActorDeclSyntax.self) || $0.is(StructDeclSyntax.self)
                    || $0.is(EnumDeclSyntax.self) || $0.is(ExtensionDeclSyntax.self)
            }),
            owner.is(ClassDeclSyntax.self) || owner.is(ActorDeclSyntax.self)
        {
            let kind = owner.is(ClassDeclSyntax.self) ? "class" : "actor"
            error(
                returnType,
                "@Memoized cannot memoize a \(kind)'s method whose result type uses 'Self' (the results are "
                    + "stored by a type that cannot name it); write the \(kind)'s name instead",
                id: "selfResult"
            )
        }
        for attribute in function.attributes {
            guard case .attribute(let attribute) = attribute else { continue }
            let name = attribute.attributeName.trimmedDescription
            if name == "inlinable" || name == "usableFromInline" {
                error(
                    attribute,
                    "@Memoized cannot memoize an @\(name) function: its body calls the private copy "
                        + "the macro makes of the original",
                    id: "inlinable"
                )
            }
        }

        var parameters: [Parameter] = []
        for (index, parameter) in function.signature.parameterClause.parameters.enumerated() {
            let name = (parameter.secondName ?? parameter.firstName).text
            if name == "_" {
                error(
                    parameter,
                    "@Memoized needs a name for parameter \(index + 1), to pass it to the function's body",
                    id: "unnamedParameter"
                )
            }
            if let attributed = parameter.type.as(AttributedTypeSyntax.self) {
                for case .attribute(let attribute) in attributed.attributes
                where attribute.attributeName.trimmedDescription == "autoclosure" {
                    error(
                        parameter,
                        "@Memoized cannot memoize a function with an @autoclosure parameter ('\(name)'): "
                            + "the cache key needs its value",
                        id: "autoclosure"
                    )
                }
                for specifier in attributed.specifiers {
                    if case .simpleTypeSpecifier(let simple) = specifier,
                        simple.specifier.tokenKind == .keyword(.inout)
                    {
                        error(
                            parameter,
                            "@Memoized cannot memoize a function with an inout parameter ('\(name)'): "
                                + "a cached call would not write it back",
                            id: "inout"
                        )
                    }
                }
            }
            if Self.containsOpaqueType(parameter.type) {
                error(
                    parameter.type,
                    "@Memoized cannot memoize a generic function: parameter '\(name)' has an opaque type",
                    id: "generic"
                )
            }
            let label = parameter.firstName.text == "_" ? nil : parameter.firstName.text
            parameters.append(Parameter(label: label, name: name, syntax: parameter))
        }

        // The macro's arguments: `keys` is the macro's; the rest go to MemoizedFunction's init.
        var keyNames = parameters.map(\.reference)
        var initializerArguments: [LabeledExprSyntax] = []
        if case .argumentList(let arguments) = attribute.arguments {
            for argument in arguments {
                guard argument.label?.text == "keys" else {
                    // Per-instance storage is a stored property, whose initializer cannot name
                    // `Self` in a class or actor.
                    if storage == .instanceProperty,
                        argument.expression.tokens(viewMode: .sourceAccurate).contains(where: {
                            $0.tokenKind == .keyword(.Self)
                        })
                    {
                        error(
                            argument.expression,
                            "the options of a class or actor instance method are evaluated where each instance's "
                                + "cache is created, which cannot name 'Self'; name the type instead",
                            id: "selfInOptions"
                        )
                    }
                    initializerArguments.append(argument.with(\.trailingComma, nil).trimmed)
                    continue
                }
                if argument.expression.is(NilLiteralExprSyntax.self) { continue }
                guard let array = argument.expression.as(ArrayExprSyntax.self) else {
                    error(
                        argument.expression,
                        "@Memoized needs 'keys' as an array literal of parameter names, such as [\"location\"]",
                        id: "keysNotLiteral"
                    )
                    continue
                }
                var chosen: [String] = []
                for element in array.elements {
                    guard let literal = element.expression.as(StringLiteralExprSyntax.self),
                        let name = literal.representedLiteralValue
                    else {
                        error(
                            element.expression,
                            "@Memoized needs each key as a string literal naming a parameter",
                            id: "keysNotLiteral"
                        )
                        continue
                    }
                    if name == "self" {
                        if storage == .global || isStatic {
                            error(literal, "'self' in keys needs an instance method", id: "selfKeyNotInstance")
                        }
                    } else if !parameters.contains(where: { $0.name == name }) {
                        let known = parameters.map { "'\($0.name)'" }.joined(separator: ", ")
                        error(
                            literal,
                            "unknown parameter '\(name)' in keys; "
                                + (known.isEmpty
                                    ? "\(function.name.text) has no parameters" : "its parameters are \(known)"),
                            id: "unknownKey"
                        )
                    }
                    if chosen.contains(name) {
                        error(literal, "parameter '\(name)' appears twice in keys", id: "duplicateKey")
                    }
                    chosen.append(name)
                }
                // Declaration order, so that the order keys are listed in does not matter.
                keyNames =
                    (chosen.contains("self") ? ["self"] : [])
                    + parameters.filter { chosen.contains($0.name) }.map(\.reference)
            }
        }
        if failed { return nil }

        let labels = parameters.map { "\($0.label ?? "_"):" }.joined()
        var identity = (typePath + ["\(baseName)(\(labels))"]).joined(separator: ".")
        // Functions of two modules can share their names and enclosing type names, and a cache
        // (a `MemoCache` one module makes public): the identity starts with the module, taken from
        // the file's ID (`Module/File.swift`). A private or fileprivate function (or one in a
        // private type or extension) can share them with one in another file of its own module:
        // its identity starts with the whole file ID.
        let isFilePrivate = ([Syntax(function)] + lexicalContext).contains { node in
            node.asProtocol(WithModifiersSyntax.self)?.modifiers.contains {
                $0.name.tokenKind == .keyword(.private) || $0.name.tokenKind == .keyword(.fileprivate)
            } ?? false
        }
        if let file = context.location(of: function, at: .afterLeadingTrivia, filePathMode: .fileID)?.file
            .as(StringLiteralExprSyntax.self)?.representedLiteralValue
        {
            if isFilePrivate {
                identity = "\(file):\(identity)"
            } else if let module = file.split(separator: "/").first, !module.isEmpty {
                identity = "\(module).\(identity)"
            }
        }
        var argumentList = LabeledExprListSyntax(initializerArguments)
        if !argumentList.isEmpty {
            argumentList = LabeledExprListSyntax(
                initializerArguments.enumerated().map { index, argument in
                    argument.with(
                        \.trailingComma,
                        index == initializerArguments.count - 1 ? nil : .commaToken(trailingTrivia: .space)
                    )
                }
            )
        }
        return MemoizationPlan(
            function: function,
            baseName: baseName,
            identity: identity,
            parameters: parameters,
            keyNames: keyNames,
            output: output?.description ?? "Void",
            storage: storage,
            isInstanceMethod: storage == .instanceProperty || (storage == .typeProperty && !isStatic),
            isAsync: isAsync,
            throwsClause: throwsClause?.trimmedDescription,
            initializerArguments: argumentList
        )
    }

    // MARK: Expansion

    /// The access level of the generated storage: the function's (`open` becomes `public`).
    private var accessModifier: String {
        for modifier in function.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.open), .keyword(.public): return "public "
            case .keyword(.package): return "package "
            case .keyword(.internal): return "internal "
            case .keyword(.fileprivate): return "fileprivate "
            case .keyword(.private): return "private "
            default: continue
            }
        }
        return ""
    }

    /// `let _memoized_NAME = MemoizedFunction<Output>("Type.name(labels:)", options...)`.
    var storageDeclaration: DeclSyntax {
        let staticKeyword = storage == .typeProperty ? "static " : ""
        let identityLiteral = StringLiteralExprSyntax(content: identity)
        // Instances sharing a cache or a storage each need their own identity, or one would get
        // another's results (the key has no `self` unless asked for).
        let sharesCache = initializerArguments.contains { ["cache", "storage"].contains($0.label?.text) }
        let identityExpression =
            storage == .instanceProperty && sharesCache
            ? "CacheKit.Memoization.instanceIdentity(\(identityLiteral))" : "\(identityLiteral)"
        let options = initializerArguments.isEmpty ? "" : ", \(initializerArguments.description)"
        return """
            \(raw: accessModifier)\(raw: staticKeyword)let \(raw: storageName) = \
            CacheKit.MemoizedFunction<\(raw: output)>(\(raw: identityExpression)\(raw: options))
            """
    }

    /// The function as written, renamed `_uncached_NAME`, private, variadic parameters as arrays,
    /// without its documentation, this macro and attributes a private copy cannot have.
    var uncachedDeclaration: DeclSyntax {
        var copy = function
        copy.name = .identifier(uncachedName)
        let dropped: Set<String> = [
            "Memoized", "CacheKitMacros.Memoized", "objc", "inlinable", "usableFromInline", "_spi", "IBAction",
            "discardableResult",
        ]
        copy.attributes = AttributeListSyntax(
            function.attributes.compactMap { element -> AttributeListSyntax.Element? in
                if case .attribute(let attribute) = element,
                    dropped.contains(attribute.attributeName.trimmedDescription)
                {
                    return nil
                }
                return element.trimmed.with(\.trailingTrivia, .space)
            }
        )
        var modifiers: [DeclModifierSyntax] = [DeclModifierSyntax(name: .keyword(.private, trailingTrivia: .space))]
        for modifier in function.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.static), .keyword(.class):
                modifiers.append(DeclModifierSyntax(name: .keyword(.static, trailingTrivia: .space)))
            case .keyword(.nonisolated), .keyword(.isolated):
                modifiers.append(modifier.trimmed.with(\.trailingTrivia, .space))
            default:
                continue
            }
        }
        copy.modifiers = DeclModifierListSyntax(modifiers)
        copy.funcKeyword = copy.funcKeyword.with(\.leadingTrivia, [])
        let parameters = Array(function.signature.parameterClause.parameters)
        copy.signature.parameterClause.parameters = FunctionParameterListSyntax(
            parameters.enumerated().map { index, parameter in
                var parameter = parameter
                if parameter.defaultValue != nil {
                    parameter.defaultValue = nil
                    parameter.type = parameter.type.with(\.trailingTrivia, [])
                }
                if parameter.ellipsis != nil {
                    parameter.ellipsis = nil
                    parameter.type = TypeSyntax(ArrayTypeSyntax(element: parameter.type.trimmed))
                }
                if index == parameters.count - 1 { parameter.trailingComma = nil }
                return parameter
            }
        )
        // The body keeps its lines, less the indentation of the declaration it was written in
        // (the expansion is indented where it is inserted); as written when it holds a multi-line
        // string literal, whose content the lines' indentation can be part of.
        let indentation = Self.indentation(of: function)
        var text = copy.trimmedDescription
        let hasMultilineString = function.tokens(viewMode: .sourceAccurate).contains {
            $0.tokenKind == .multilineStringQuote
        }
        if !indentation.isEmpty && !hasMultilineString {
            text = text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.hasPrefix(indentation) ? $0.dropFirst(indentation.count) : $0 }
                .joined(separator: "\n")
        }
        return DeclSyntax("\(raw: text)")
    }

    /// The spaces and tabs after the last line break before `declaration`.
    private static func indentation(of declaration: some SyntaxProtocol) -> String {
        var indentation = ""
        for piece in declaration.leadingTrivia {
            switch piece {
            case .spaces, .tabs: indentation += Trivia(pieces: [piece]).description
            default: indentation = ""
            }
        }
        return indentation
    }

    /// `_memoized_NAME`, qualified as the function body must name it.
    private var storageReference: String {
        switch storage {
        case .global: return storageName
        case .typeProperty: return "Self.\(storageName)"
        case .instanceProperty: return "self.\(storageName)"
        }
    }

    /// The call of `_uncached_NAME` with the function's own arguments.
    private var uncachedCall: String {
        let arguments = parameters.map { parameter in
            parameter.label.map { "\($0): \(parameter.reference)" } ?? parameter.reference
        }
        let receiver = storage == .global ? "" : "self."
        return "\(receiver)\(uncachedName)(\(arguments.joined(separator: ", ")))"
    }

    /// The new body: the call through the cache.
    var body: CodeBlockItemSyntax {
        let key = "CacheKit.MemoArguments(\(keyNames.joined(separator: ", ")))"
        let throwing = throwsClause != nil
        let tryKeyword = throwing ? "try " : ""
        let awaitKeyword = isAsync ? "await " : ""
        let effects = (isAsync ? " async" : "") + (throwsClause.map { " \($0)" } ?? "")
        return """
            \(raw: tryKeyword)\(raw: awaitKeyword)\(raw: storageReference).call(arguments: \(raw: key)) { \
            ()\(raw: effects) -> \(raw: output) in
                \(raw: tryKeyword)\(raw: awaitKeyword)\(raw: uncachedCall)
            }
            """
    }
}

/// An error `@Memoized` reports about the declaration it is attached to.
struct MemoizedDiagnostic: DiagnosticMessage {
    let message: String
    let diagnosticID: MessageID
    var severity: DiagnosticSeverity { .error }

    init(_ message: String, id: String) {
        self.message = message
        self.diagnosticID = MessageID(domain: "CacheKitMacros", id: id)
    }
}
#endif
