// Pins the glibc symbols libvgpu.so uses to their oldest versions, so that a library built on a
// recent distribution (glibc 2.34+ moved dlopen and the pthread mutex functions into libc with
// new versions) still loads into containers with an older glibc (2.17 and later). Included with
// -include into every object of libvgpu.so; the old versions live in libdl.so.2 and
// libpthread.so.0 on old systems, which the library therefore lists as needed.
#pragma once

#if defined(__x86_64__)
#define VGPU_GLIBC_BASE "GLIBC_2.2.5"
#define VGPU_GLIBC_ROBUST "GLIBC_2.12"
#elif defined(__aarch64__)
#define VGPU_GLIBC_BASE "GLIBC_2.17"
#define VGPU_GLIBC_ROBUST "GLIBC_2.17"
#endif

#ifdef VGPU_GLIBC_BASE
#define VGPU_PIN(symbol, version) __asm__(".symver " #symbol "," #symbol "@" version)
VGPU_PIN(dlopen, VGPU_GLIBC_BASE);
VGPU_PIN(dlerror, VGPU_GLIBC_BASE);
VGPU_PIN(dlvsym, VGPU_GLIBC_BASE);
VGPU_PIN(pthread_mutex_timedlock, VGPU_GLIBC_BASE);
VGPU_PIN(pthread_mutex_trylock, VGPU_GLIBC_BASE);
VGPU_PIN(pthread_mutexattr_init, VGPU_GLIBC_BASE);
VGPU_PIN(pthread_mutexattr_destroy, VGPU_GLIBC_BASE);
VGPU_PIN(pthread_mutexattr_setpshared, VGPU_GLIBC_BASE);
VGPU_PIN(pthread_mutex_consistent, VGPU_GLIBC_ROBUST);
VGPU_PIN(pthread_mutexattr_setrobust, VGPU_GLIBC_ROBUST);
#undef VGPU_PIN
#endif
