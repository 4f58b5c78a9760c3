// The exported dlsym of libvgpu.so: asks vgpu_DlsymHookFor(handle, name) for a hook; when there
// is none, jumps (does not call) to the real dlsym so that the real dlsym sees the original
// caller's return address and RTLD_NEXT keeps its meaning. See dlsym_hook.cc.
#if defined(__x86_64__)
    .text
    .globl  dlsym
    .type   dlsym, @function
dlsym:
    .cfi_startproc
    endbr64
    pushq   %rdi
    .cfi_adjust_cfa_offset 8
    pushq   %rsi
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp
    .cfi_adjust_cfa_offset 8
    call    vgpu_DlsymHookFor
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %rsi
    .cfi_adjust_cfa_offset -8
    popq    %rdi
    .cfi_adjust_cfa_offset -8
    testq   %rax, %rax
    jnz     1f
    jmp     *vgpu_real_dlsym(%rip)
1:
    ret
    .cfi_endproc
    .size   dlsym, .-dlsym
#elif defined(__aarch64__)
    .text
    .globl  dlsym
    .type   dlsym, %function
    .p2align 2
dlsym:
    .cfi_startproc
    stp     x29, x30, [sp, #-32]!
    .cfi_def_cfa_offset 32
    .cfi_offset 29, -32
    .cfi_offset 30, -24
    mov     x29, sp
    stp     x0, x1, [sp, #16]
    bl      vgpu_DlsymHookFor
    mov     x9, x0
    ldp     x0, x1, [sp, #16]
    ldp     x29, x30, [sp], #32
    .cfi_def_cfa_offset 0
    .cfi_restore 29
    .cfi_restore 30
    cbnz    x9, 1f
    adrp    x16, vgpu_real_dlsym
    ldr     x16, [x16, #:lo12:vgpu_real_dlsym]
    br      x16
1:
    mov     x0, x9
    ret
    .cfi_endproc
    .size   dlsym, .-dlsym
#endif
    .section .note.GNU-stack,"",%progbits
