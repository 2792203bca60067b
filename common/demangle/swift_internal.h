/*
 * swift_internal - the Swift demangler's node tree, shared by the parser (swift.c) and the
 * printer (swift_print.c). Node kinds and their meaning follow the Swift repository's
 * docs/ABI/Mangling.rst (the grammar) and the node names its demangler uses, so that a
 * reader can hold the two side by side.
 */
#ifndef STACKSIFT_DEMANGLE_SWIFT_INTERNAL_H
#define STACKSIFT_DEMANGLE_SWIFT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWIFT_KINDS(X)                                                                       \
    X(Allocator) X(AnonymousContext) X(ArgumentTuple) X(AssociatedConformanceDescriptor)     \
    X(AssociatedTypeDescriptor) X(AssociatedTypeMetadataAccessor) X(AssociatedTypeRef)        \
    X(AssociatedTypeWitnessTableAccessor) X(AsyncAnnotation) X(AsyncAwaitResumePartialFunction) \
    X(AsyncFunctionPointer) X(AsyncSuspendResumePartialFunction) X(AutoClosureType)           \
    X(BackDeploymentFallback) X(BackDeploymentThunk) X(BaseConformanceDescriptor)             \
    X(BaseWitnessTableAccessor) X(BoundGenericClass) X(BoundGenericEnum) X(BoundGenericFunction) \
    X(BoundGenericOtherNominalType) X(BoundGenericProtocol) X(BoundGenericStructure)          \
    X(BoundGenericTypeAlias) X(BuiltinTypeName) X(CFunctionPointer) X(Class)                  \
    X(ClassMetadataBaseOffset) X(CompileTimeConst) X(ConcurrentFunctionType)                  \
    X(ConstrainedExistential) X(ConstrainedExistentialRequirementList)                         \
    X(ConstrainedExistentialSelf) X(Constructor) X(CoroutineContinuationPrototype) X(CurryThunk) \
    X(Deallocator) X(DeclContext) X(DefaultArgumentInitializer)                                \
    X(DefaultAssociatedConformanceAccessor) X(DefaultAssociatedTypeMetadataAccessor)          \
    X(DependentAssociatedTypeRef) X(DependentGenericConformanceRequirement)                   \
    X(DependentGenericLayoutRequirement) X(DependentGenericParamCount)                         \
    X(DependentGenericParamType) X(DependentGenericSameTypeRequirement)                       \
    X(DependentGenericSignature) X(DependentGenericType) X(DependentMemberType)              \
    X(DependentPseudogenericSignature) X(Destructor) X(DidSet) X(DifferentiableFunctionType)  \
    X(Directness) X(DispatchThunk) X(DistributedAccessor) X(DistributedThunk)                 \
    X(DynamicAttribute) X(DynamicSelf) X(DynamicallyReplaceableFunctionImpl)                  \
    X(DynamicallyReplaceableFunctionKey) X(DynamicallyReplaceableFunctionVar) X(EmptyList)    \
    X(Enum) X(EnumCase) X(ErrorType) X(EscapingAutoClosureType) X(EscapingObjCBlock)          \
    X(ExistentialMetatype) X(ExplicitClosure) X(Extension) X(FieldOffset)                     \
    X(FirstElementMarker) X(FreestandingMacroExpansion) X(FullTypeMetadata) X(Function)       \
    X(FunctionSignatureSpecialization) X(FunctionSignatureSpecializationParam)               \
    X(FunctionSignatureSpecializationParamKind) X(FunctionSignatureSpecializationParamPayload) \
    X(FunctionSignatureSpecializationReturn) X(FunctionType) X(GenericPartialSpecialization)  \
    X(GenericPartialSpecializationNotReAbstracted) X(GenericProtocolWitnessTable)            \
    X(GenericProtocolWitnessTableInstantiationFunction) X(GenericSpecialization)             \
    X(GenericSpecializationInResilienceDomain) X(GenericSpecializationNotReAbstracted)       \
    X(GenericSpecializationParam) X(GenericSpecializationPrespecialized)                     \
    X(GenericTypeMetadataPattern) X(GenericTypeParamDecl) X(Getter) X(Global)                 \
    X(GlobalActorFunctionType) X(GlobalGetter) X(HasSymbolQuery) X(IVarDestroyer)             \
    X(IVarInitializer) X(Identifier) X(ImplConvention) X(ImplDifferentiabilityKind)          \
    X(ImplErasedIsolation) X(ImplErrorResult) X(ImplEscaping) X(ImplFunctionAttribute)        \
    X(ImplFunctionConvention) X(ImplFunctionType) X(ImplInvocationSubstitutions)             \
    X(ImplParameter) X(ImplParameterAttr) X(ImplPatternSubstitutions) X(ImplResult)           \
    X(ImplSendingResult) X(ImplYield) X(ImplicitClosure) X(InOut) X(Index) X(InfixOperator)   \
    X(InitAccessor) X(Initializer) X(InlinedGenericFunction) X(IsSerialized) X(Isolated)      \
    X(IsolatedAnyFunctionType) X(KeyPathGetterThunkHelper) X(KeyPathSetterThunkHelper)        \
    X(KeyPathEqualsThunkHelper) X(KeyPathHashThunkHelper) X(LabelList)                        \
    X(LazyProtocolWitnessTableAccessor) X(LazyProtocolWitnessTableCacheVariable)             \
    X(LocalDeclName) X(Macro) X(MacroExpansionUniqueName) X(MaterializeForSet) X(MergedFunction) \
    X(Metaclass) X(Metatype) X(MetatypeParamsRemoved) X(MetatypeRepresentation)               \
    X(MethodDescriptor) X(MethodLookupFunction) X(ModifyAccessor) X(Module)                   \
    X(NativeOwningAddressor) X(NativeOwningMutableAddressor) X(NativePinningAddressor)        \
    X(NativePinningMutableAddressor) X(NoDerivative) X(NoEscapeFunctionType)                  \
    X(NominalTypeDescriptor) X(NominalTypeDescriptorRecord) X(NonObjCAttribute) X(Number)     \
    X(ObjCAttribute) X(ObjCBlock) X(ObjCMetadataUpdateFunction) X(OpaqueReturnType)           \
    X(OpaqueReturnTypeIndex) X(OpaqueReturnTypeOf) X(OpaqueType) X(OpaqueTypeDescriptor)      \
    X(OpaqueTypeDescriptorRecord) X(OtherNominalType) X(OutlinedAssignWithCopy)               \
    X(OutlinedAssignWithTake) X(OutlinedBridgedMethod) X(OutlinedConsume) X(OutlinedCopy)     \
    X(OutlinedDestroy) X(OutlinedInitializeWithCopy) X(OutlinedInitializeWithTake)           \
    X(OutlinedReadOnlyObject) X(OutlinedRelease) X(OutlinedRetain) X(OutlinedVariable)        \
    X(Owned) X(OwningAddressor) X(OwningMutableAddressor) X(PartialApplyForwarder)            \
    X(PartialApplyObjCForwarder) X(PostfixOperator) X(PrefixOperator) X(PrivateDeclName)      \
    X(PropertyDescriptor) X(PropertyWrapperBackingInitializer)                                \
    X(PropertyWrapperInitFromProjectedValue) X(Protocol) X(ProtocolConformance)               \
    X(ProtocolConformanceDescriptor) X(ProtocolConformanceDescriptorRecord)                  \
    X(ProtocolDescriptor) X(ProtocolDescriptorRecord) X(ProtocolList)                        \
    X(ProtocolListWithAnyObject) X(ProtocolListWithClass) X(ProtocolRequirementsBaseDescriptor) \
    X(ProtocolSelfConformanceDescriptor) X(ProtocolSelfConformanceWitness)                    \
    X(ProtocolSelfConformanceWitnessTable) X(ProtocolWitness) X(ProtocolWitnessTable)        \
    X(ProtocolWitnessTableAccessor) X(ProtocolWitnessTablePattern) X(ReabstractionThunk)      \
    X(ReabstractionThunkHelper) X(ReabstractionThunkHelperWithSelf)                           \
    X(ReabstractionThunkHelperWithGlobalActor) X(ReadAccessor) X(ReflectionMetadataAssocTypeDescriptor) \
    X(ReflectionMetadataBuiltinDescriptor) X(ReflectionMetadataFieldDescriptor)              \
    X(ReflectionMetadataSuperclassDescriptor) X(RelatedEntityDeclName)                       \
    X(ResilientProtocolWitnessTable) X(RetroactiveConformance) X(ReturnType) X(SILBoxType)    \
    X(Sending) X(SendingResultFunctionType) X(Setter) X(Shared) X(SpecializationPassID)       \
    X(Static) X(Structure) X(Subscript) X(Suffix) X(ThinFunctionType) X(ThrowsAnnotation)     \
    X(Tuple) X(TupleElement) X(TupleElementName) X(Type) X(TypeAlias) X(TypeList)             \
    X(TypeMangling) X(TypeMetadata) X(TypeMetadataAccessFunction)                             \
    X(TypeMetadataCompletionFunction) X(TypeMetadataDemanglingCache)                          \
    X(TypeMetadataInstantiationCache) X(TypeMetadataInstantiationFunction)                    \
    X(TypeMetadataLazyCache) X(TypeMetadataSingletonInitializationCache) X(TypedThrowsAnnotation) \
    X(UncurriedFunctionType) X(Unmanaged) X(Unowned) X(UnsafeAddressor)                       \
    X(UnsafeMutableAddressor) X(VTableThunk) X(ValueWitness) X(ValueWitnessTable) X(Variable)  \
    X(VariadicMarker) X(Weak) X(WillSet) X(AccessibleFunctionRecord) X(Uniquable)            \
    X(AutoDiffFunction) X(AutoDiffFunctionKind) X(SILThunkIdentity) X(ExtendedExistentialTypeShape) \
    X(PeerAttachedMacroExpansion) X(MemberAttachedMacroExpansion) X(AccessorAttachedMacroExpansion) \
    X(MemberAttributeAttachedMacroExpansion) X(ConformanceAttachedMacroExpansion)             \
    X(ExtensionAttachedMacroExpansion) X(BodyAttachedMacroExpansion) X(PreambleAttachedMacroExpansion) \
    X(LifetimeDependence) X(SelfLifetimeDependence) X(SILBoxTypeWithLayout) X(SILBoxLayout)      \
    X(SILBoxMutableField) X(SILBoxImmutableField) X(TypeSymbolicReference) X(ProtocolSymbolicReference)               \
    X(ObjCAsyncCompletionHandlerImpl) X(PredefinedObjCAsyncCompletionHandlerImpl)             \
    X(AnyConformance) X(ConformanceRef) X(AssocTypePath) X(ModuleDescriptor) X(ExtensionDescriptor) X(AnonymousDescriptor) X(IndexSubset) X(AutoDiffDerivativeVTableThunk) X(DifferentiabilityWitness) X(AutoDiffSubsetParametersThunk) X(AutoDiffSelfReorderingReabstractionThunk) \
    X(WitnessTableOffset)

#define SWIFT_KIND_ENUM(k) K_##k,
typedef enum { SWIFT_KINDS(SWIFT_KIND_ENUM) K__COUNT } swift_kind;

typedef struct swift_node swift_node;
struct swift_node {
    uint16_t kind;             /* swift_kind */
    bool has_text, has_index;
    uint32_t nchildren, cap;   /* children used / allocated */
    uint64_t index;            /* numeric payload (discriminators, counts, depths) */
    const char *text;          /* text payload (identifiers, attributes), not NUL-terminated */
    uint32_t text_len;
    swift_node **child;
};

/* swift_print - print `root` into buf (cap bytes incl. NUL) in the full (`swift demangle`)
 * or simplified (`swift demangle --simplified`, atos) form. Returns the length, or 0 when the
 * tree cannot be printed (malformed, too deep, or longer than cap - 1). */
size_t swift_print(char *buf, size_t cap, const swift_node *root, bool simplified);

/* swift_print_swift3 - like swift_print(simplified) in the style Swift 3-era tools printed
 * the names of Swift 3's "_T" mangling ("bar.bas(zim : zim) -> ()", "(f() -> ()).(closure #1)",
 * "thunk"), as the Swift project's simplified-manglings.txt records it. */
size_t swift_print_swift3(char *buf, size_t cap, const swift_node *root);

/* swift_demangle_buf - demangle `name` (a Swift symbol with its prefix) into buf; 0 when it
 * is not a Swift name we can read. */
size_t swift_demangle_buf(char *buf, size_t cap, const char *name, size_t len, bool simplified);

#endif
