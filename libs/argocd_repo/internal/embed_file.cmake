# cmake -DINPUT=<file> -DOUTPUT=<file.cc> -DNAMESPACE=<ns> -DSYMBOL=<name> -P embed_file.cmake
# Writes a C++ source defining `std::string_view <NAMESPACE>::<SYMBOL>()` over INPUT's bytes (the
# Argo CD descriptor set, about 135 KB): no linker tricks, no extra tool.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by libs/argocd_repo/internal/embed_file.cmake. Do not edit.\n"
  "#include <string_view>\n\n"
  "namespace ${NAMESPACE} {\n"
  "namespace {\n"
  "constexpr char kBytes[${size} + 1] = {\n${bytes}'\\0'};\n"
  "}  // namespace\n"
  "std::string_view ${SYMBOL}() { return {kBytes, ${size}}; }\n"
  "}  // namespace ${NAMESPACE}\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
