# Embeds IMAGE (made by a custom command) as a C array SYMBOL (plus
# SYMBOL_size) and appends the generated .c file to the list TARGET_VAR in the
# caller's caller.
macro(crec__embed_image out_var image symbol)
  set(csrc ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.c)
  add_custom_command(OUTPUT ${csrc}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${image} -DOUTPUT=${csrc} -DSYMBOL=${symbol} -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${image} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake VERBATIM)
  set(${out_var} ${${out_var}} ${csrc} PARENT_SCOPE)
endmacro()

# crec_nvcc_embed(TARGET_VAR SOURCE SYMBOL FORMAT ARCH_FLAGS...)
# Compiles SOURCE with nvcc to FORMAT (ptx or fatbin), embeds the result as a
# C array SYMBOL, and appends the generated .c file to the list TARGET_VAR.
function(crec_nvcc_embed out_var source symbol format)
  set(image ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.${format})
  add_custom_command(OUTPUT ${image}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -${format} ${ARGN} -o ${image} ${CMAKE_CURRENT_SOURCE_DIR}/${source}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${source}
    COMMENT "nvcc: ${source} -> ${symbol}.${format}" VERBATIM)
  crec__embed_image(${out_var} ${image} ${symbol})
endfunction()

# crec_nvcc_embed_devrt(TARGET_VAR SOURCE SYMBOL ARCH...)
# Device code that calls the device runtime: compiled with -rdc for each real
# architecture ARCH (80, 90, ...), linked against cudadevrt into one fatbin of
# cubins, and embedded like crec_nvcc_embed(). A chip none of them runs has no
# image in it (the loader reports that).
function(crec_nvcc_embed_devrt out_var source symbol)
  set(object ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.o)
  set(image ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.fatbin)
  set(gencode)
  foreach(arch ${ARGN})
    list(APPEND gencode -gencode arch=compute_${arch},code=sm_${arch})
  endforeach()
  add_custom_command(OUTPUT ${image}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -rdc=true -c ${gencode} -o ${object} ${CMAKE_CURRENT_SOURCE_DIR}/${source}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -dlink -fatbin ${gencode} -o ${image} ${object} -lcudadevrt
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${source}
    COMMENT "nvcc: ${source} -> ${symbol}.fatbin (linked with cudadevrt)" VERBATIM)
  crec__embed_image(${out_var} ${image} ${symbol})
endfunction()
