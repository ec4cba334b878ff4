# crec_nvcc_embed(TARGET_VAR SOURCE SYMBOL FORMAT ARCH_FLAGS...)
# Compiles SOURCE with nvcc to FORMAT (ptx or fatbin), embeds the result as a
# C array SYMBOL, and appends the generated .c file to the list TARGET_VAR.
function(crec_nvcc_embed out_var source symbol format)
  set(image ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.${format})
  set(csrc ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.c)
  add_custom_command(OUTPUT ${image}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -${format} ${ARGN} -o ${image} ${CMAKE_CURRENT_SOURCE_DIR}/${source}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${source}
    COMMENT "nvcc: ${source} -> ${symbol}.${format}" VERBATIM)
  add_custom_command(OUTPUT ${csrc}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${image} -DOUTPUT=${csrc} -DSYMBOL=${symbol} -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${image} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake VERBATIM)
  set(${out_var} ${${out_var}} ${csrc} PARENT_SCOPE)
endfunction()
