// Thread-safety annotations: which lock guards which data, and which functions need a lock held,
// written so that clang's thread-safety analysis (-Wthread-safety) checks them at compile time.
//
// Contract:
// - Under clang each macro expands to the attribute of the same meaning
//   (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html); under any other compiler (GCC builds
//   the project) to nothing. The annotations never change the generated code, a type's layout or
//   its size: they are read by the analysis only.
// - The build does not enable the analysis; scripts/check-thread-safety runs clang with
//   `-fsyntax-only -Wthread-safety -Werror` over the sources that use these macros (the unit test
//   `thread_safety`).
// - A capability is a type (VGPU_CAPABILITY): vgpu::Mutex (common/mutex.h) for the threads of one
//   process, shm::MutexCell (shm/region.h) for the robust lock of a shared region. A scoped
//   capability (VGPU_SCOPED_CAPABILITY) is an object that holds one from its constructor to its
//   destructor (vgpu::MutexLock, shm::ArbiterLock).
// - Constructors and destructors are not analysed (clang's rule): their bodies may touch guarded
//   members and call functions that need the lock.
// - Lambdas are analysed as functions of their own: one that runs with a lock held (a condition
//   variable's predicate) says so with VGPU_REQUIRES after its parameter list.
// Header only, no dependency; libvgpu.so may include it.
#pragma once

#if defined(__clang__)
#define VGPU_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define VGPU_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are locks, named `kind` ("mutex") in the analysis' messages.
#define VGPU_CAPABILITY(kind) VGPU_THREAD_ANNOTATION(capability(kind))

// On a class whose constructor acquires a capability and whose destructor releases it.
#define VGPU_SCOPED_CAPABILITY VGPU_THREAD_ANNOTATION(scoped_lockable)

// On a data member: read or written only with `mu` held.
#define VGPU_GUARDED_BY(mu) VGPU_THREAD_ANNOTATION(guarded_by(mu))

// On a pointer or smart pointer member: what it points to is read or written only with `mu` held
// (the pointer itself is not guarded).
#define VGPU_PT_GUARDED_BY(mu) VGPU_THREAD_ANNOTATION(pt_guarded_by(mu))

// On a function: callers hold these capabilities (exclusively).
#define VGPU_REQUIRES(...) VGPU_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))

// On a function: callers must not hold these (it takes them itself and is not reentrant).
#define VGPU_EXCLUDES(...) VGPU_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On a function: it acquires these capabilities (without arguments, in a member function of a
// capability or of a scoped capability: the object itself).
#define VGPU_ACQUIRE(...) VGPU_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))

// On a function: it releases these capabilities (without arguments: the object itself).
#define VGPU_RELEASE(...) VGPU_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
