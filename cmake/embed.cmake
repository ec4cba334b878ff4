# Writes INPUT as a C byte array named SYMBOL (plus SYMBOL_size) into OUTPUT.
# Usage: cmake -DINPUT=f -DOUTPUT=f.c -DSYMBOL=name -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}" "/* generated from ${INPUT}; do not edit */\n#include <stddef.h>\nconst unsigned char ${SYMBOL}[] = {\n${bytes}0x00};\nconst size_t ${SYMBOL}_size = ${size};\n")
