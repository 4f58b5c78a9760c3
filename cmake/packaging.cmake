# Install rules and the Debian packages (CPack).
#
#   cmake --install build --prefix P                      # the production install (component
#                                                         # runtime): P/bin/vgpu,
#                                                         # P/lib/vgpu/libvgpu.so, P/share/vgpu/data
#   cmake --install build --prefix P --component simgpu   # the simulated GPU, for vgpu run --sim
#                                                         # and tests: P/lib/vgpu/simgpu/
#   cd build && cpack                                     # build/packages/vgpu_<v>_<arch>.deb and
#                                                         # vgpu-simgpu_<v>_<arch>.deb (prefix /usr)
#
# The simulated GPU is never part of a plain install nor of the `vgpu` package: its rules are
# EXCLUDE_FROM_ALL and it is packaged alone as `vgpu-simgpu`. docs/install.md describes the layout.

set(VGPU_SIMGPU_INSTALL_DIR ${VGPU_INSTALL_LIBDIR}/simgpu)

if(TARGET vgpu)
  install(TARGETS vgpu RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
if(TARGET vgpu_preload)
  install(TARGETS vgpu_preload LIBRARY DESTINATION ${VGPU_INSTALL_LIBDIR} COMPONENT runtime)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/ DESTINATION ${VGPU_INSTALL_DATADIR}/data
  COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
  COMPONENT runtime)

set(vgpu_components runtime)
if(TARGET vgpu_simgpu_cuda AND TARGET vgpu_simgpu_nvml)
  install(TARGETS vgpu_simgpu_cuda vgpu_simgpu_nvml
    LIBRARY DESTINATION ${VGPU_SIMGPU_INSTALL_DIR} COMPONENT simgpu EXCLUDE_FROM_ALL)
  list(APPEND vgpu_components simgpu)
endif()

# --- Debian packages -------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME vgpu)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "vgpu")
set(CPACK_PACKAGE_CONTACT "vgpu maintainers <vgpu@localhost>")
# Each package's description: its first line is the synopsis (CPACK_PACKAGE_DESCRIPTION_SUMMARY
# is left unset, so that CPack does not put the same synopsis before both).
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL ${vgpu_components})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: computed from the binaries' shared libraries by dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME vgpu)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "share NVIDIA GPUs between containers and processes
vgpu gives each container or process a slice of a GPU's memory and compute,
enforced by libvgpu.so (an interposer of the CUDA driver API and NVML), and
places pods well across a Kubernetes cluster. This package holds the vgpu
command (vgpu run, top, node, scheduler, sim, bench), libvgpu.so in
/usr/lib/vgpu and the bundled trace data in /usr/share/vgpu/data.")

set(CPACK_DEBIAN_SIMGPU_PACKAGE_NAME vgpu-simgpu)
set(CPACK_DEBIAN_SIMGPU_PACKAGE_DEPENDS "vgpu (= ${PROJECT_VERSION})")
set(CPACK_COMPONENT_SIMGPU_DESCRIPTION "simulated NVIDIA GPU for vgpu (testing only)
A libcuda.so.1 and a libnvidia-ml.so.1 that simulate an NVIDIA GPU in host
memory, in /usr/lib/vgpu/simgpu, outside the dynamic linker's search path.
They are used only when asked for (vgpu run --sim, vgpu top --sim,
vgpu node --sim). Not for production machines.")

include(CPack)
