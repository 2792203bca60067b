# embed_files - helpers for the cmake -P scripts that compile files into the binary as C
# arrays (server/store/embed_migrations.cmake, server/web/embed_web.cmake). Include it with
#   include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/embed_files.cmake)
# and list this file in the custom command's DEPENDS, so that a change here regenerates.

# embed_c_bytes(<var> <file> [<len_var>]) - set <var> to the file's bytes as a C initializer
# list with a terminating NUL ("0x2d,0x2d,...,0x00", for `static const char x[] = {...};`)
# and <len_var>, if given, to the file's size in bytes (without the NUL).
function(embed_c_bytes var file)
  file(READ ${file} hex HEX)
  string(LENGTH "${hex}" hexlen)
  math(EXPR len "${hexlen} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  set(${var} "${hex}0x00" PARENT_SCOPE)
  if(ARGC GREATER 2)
    set(${ARGV2} ${len} PARENT_SCOPE)
  endif()
endfunction()

# embed_write_if_changed(<file> <content>) - write <content> to <file> only when it differs,
# so that an unchanged generated source keeps its timestamp and is not compiled again.
function(embed_write_if_changed file content)
  if(EXISTS ${file})
    file(READ ${file} old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE ${file} "${content}")
endfunction()
