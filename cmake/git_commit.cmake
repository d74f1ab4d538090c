# Writes OUT with the source tree's commit at build time (rewritten only when it changes), so a
# binary carried to a machine without the repository still names the commit it was built from.
execute_process(COMMAND git -C "${SRC}" rev-parse HEAD OUTPUT_VARIABLE commit
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  set(commit "unknown")
endif()
execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(dirty)
  set(flag "true")
else()
  set(flag "false")
endif()
set(text "#pragma once\n#define LONGMIX_BUILD_COMMIT \"${commit}\"\n#define LONGMIX_BUILD_DIRTY ${flag}\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
