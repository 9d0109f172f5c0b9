# Warnings every Ember target compiles with. Third-party headers come in as SYSTEM includes so
# that their warnings do not count against us.
function(ember_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
    -Wno-sign-conversion -Wnon-virtual-dtor -Wimplicit-fallthrough)
  if(EMBER_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
