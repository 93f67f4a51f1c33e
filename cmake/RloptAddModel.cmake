# RloptAddModel.cmake - rlopt_add_model(): an ONNX model as C, generated at
# build time and compiled into a target.
#
#   rlopt_add_model(<target> <model.onnx>
#                   [NAME <c_name>]          files and symbol prefix (default <model stem>_opt)
#                   [HW <name>|<file.xml>]   machine profile (default ${RLOPT_DEFAULT_HW},
#                                            else rlopt's own default: host or generic-cpu)
#                   [BATCH <n>]              bind batch-like symbolic dimensions
#                   [OUTPUT_DIR <dir>]       default ${CMAKE_CURRENT_BINARY_DIR}/rlopt/<target>
#                   [NO_THREADS]             compile with RL_NO_THREADS (no pthreads)
#                   [DEPENDS <file>...]      more inputs, e.g. the model's external data
#                   [OPTIONS <arg>...])      more rlopt arguments, e.g. -O1 --weights-max 0
#
# <target> gets <c_name>.c among its sources, the folder of <c_name>.h on its
# include path, C11, libm and (without NO_THREADS) Threads::Threads. When
# <target> does not exist it is created as a static library whose include
# path and link libraries are PUBLIC, so several programs can link one model.
#
# The file is regenerated when the model, the DEPENDS, the profile file, the
# rlopt executable or the arguments change. The arguments are written to
# <c_name>.rlopt-args at configure time, and only when they differ, so that
# a changed OPTIONS list reruns rlopt with Makefile generators too (they do
# not track command lines as Ninja does).
#
# Arguments reach rlopt as an argument list (VERBATIM), never through a
# shell. HW, BATCH and NAME are checked at configure time, so a hostile or
# mistyped value stops the configure with one line instead of reaching a
# command line; rlopt rejects bad OPTIONS itself at build time (exit 1).
#
# Constants larger than --weights-max (rlopt's default 16 MiB for C) go to
# OUTPUT_DIR/<c_name>.weights, which <c_name>_init() reads at run time.
#
# Call it in the directory that defines <target>: a custom command's output
# can only feed targets of its own directory.
include_guard(GLOBAL)

set(RLOPT_DEFAULT_HW "" CACHE STRING
    "Machine profile rlopt_add_model() uses when a call gives no HW (empty: rlopt's default)")

function(rlopt_add_model target model)
  cmake_parse_arguments(PARSE_ARGV 2 RL "NO_THREADS" "NAME;HW;BATCH;OUTPUT_DIR" "DEPENDS;OPTIONS")
  set(fn "rlopt_add_model(${target})")
  if(RL_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unexpected arguments: ${RL_UNPARSED_ARGUMENTS}")
  endif()
  if(RL_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${fn}: ${RL_KEYWORDS_MISSING_VALUES} needs a value")
  endif()
  if(NOT TARGET rlopt::rlopt)
    message(FATAL_ERROR "${fn}: rlopt::rlopt is not defined: call find_package(rlopt CONFIG REQUIRED) first")
  endif()
  if(NOT CMAKE_C_COMPILER_LOADED)
    message(FATAL_ERROR "${fn}: the generated code is C: enable it with project(... LANGUAGES C) or enable_language(C)")
  endif()

  get_filename_component(model_abs "${model}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${model_abs}" OR IS_DIRECTORY "${model_abs}")
    message(FATAL_ERROR "${fn}: model '${model}' not found (looked at ${model_abs})")
  endif()

  if(NOT DEFINED RL_NAME)
    get_filename_component(stem "${model_abs}" NAME_WE)
    string(MAKE_C_IDENTIFIER "${stem}_opt" RL_NAME)
  endif()
  if(NOT RL_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${fn}: NAME '${RL_NAME}' is not a C identifier (it prefixes the generated symbols)")
  endif()

  set(args "${model_abs}")
  set(deps "${model_abs}")
  if(NOT DEFINED RL_HW AND RLOPT_DEFAULT_HW)
    set(RL_HW "${RLOPT_DEFAULT_HW}")
  endif()
  if(DEFINED RL_HW)
    if(RL_HW MATCHES "\\.xml$")
      get_filename_component(hw_abs "${RL_HW}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      if(NOT EXISTS "${hw_abs}")
        message(FATAL_ERROR "${fn}: HW profile '${RL_HW}' not found (looked at ${hw_abs})")
      endif()
      list(APPEND args --hw "${hw_abs}")
      list(APPEND deps "${hw_abs}")
    elseif(RL_HW MATCHES "^[A-Za-z0-9][A-Za-z0-9._-]*$")
      list(APPEND args --hw "${RL_HW}")
    else()
      message(FATAL_ERROR "${fn}: HW '${RL_HW}' is neither a profile name (letters, digits, . _ -; "
                          "see `rlopt hw`) nor a path ending in .xml")
    endif()
  endif()
  if(DEFINED RL_BATCH)
    if(NOT RL_BATCH MATCHES "^[1-9][0-9]?[0-9]?[0-9]?[0-9]?[0-9]?[0-9]?[0-9]?[0-9]?$")
      message(FATAL_ERROR "${fn}: BATCH '${RL_BATCH}' is not a positive integer below 10^9")
    endif()
    list(APPEND args --batch "${RL_BATCH}")
  endif()
  foreach(o IN LISTS RL_OPTIONS)
    if(o STREQUAL "" OR o MATCHES "[\n\r]")
      message(FATAL_ERROR "${fn}: OPTIONS holds an empty or multi-line argument")
    endif()
    if(o MATCHES "^(-o|--report)(=.*)?$")
      message(FATAL_ERROR "${fn}: OPTIONS may not contain '${o}': rlopt_add_model chooses the output")
    endif()
  endforeach()
  list(APPEND args ${RL_OPTIONS})
  foreach(d IN LISTS RL_DEPENDS)
    get_filename_component(d_abs "${d}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND deps "${d_abs}")
  endforeach()

  if(NOT DEFINED RL_OUTPUT_DIR)
    set(RL_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/rlopt/${target}")
  endif()
  get_filename_component(dir "${RL_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  file(MAKE_DIRECTORY "${dir}")
  set(out_c "${dir}/${RL_NAME}.c")
  set(out_h "${dir}/${RL_NAME}.h")

  # The arguments as a file that changes only when they do (see above).
  set(stamp "${dir}/${RL_NAME}.rlopt-args")
  string(REPLACE ";" "\n" text "${args}")
  set(text "${text}\n")
  set(old "")
  if(EXISTS "${stamp}")
    file(READ "${stamp}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${stamp}" "${text}")
  endif()

  add_custom_command(
    OUTPUT "${out_c}" "${out_h}"
    COMMAND rlopt::rlopt ${args} -o "${out_c}"
    DEPENDS ${deps} "${stamp}" "$<TARGET_FILE:rlopt::rlopt>"
    COMMENT "rlopt: generating ${RL_NAME}.c from ${model_abs}"
    VERBATIM)

  if(TARGET ${target})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      message(FATAL_ERROR "${fn}: '${target}' is a ${type} and cannot hold sources")
    endif()
    set(vis PRIVATE)
    if(type MATCHES "_LIBRARY$")
      set(vis PUBLIC)
    endif()
  else()
    add_library(${target} STATIC)
    set(vis PUBLIC)
  endif()
  target_sources(${target} PRIVATE "${out_c}" "${out_h}")
  target_include_directories(${target} ${vis} "${dir}")
  target_compile_features(${target} PRIVATE c_std_11)
  if(UNIX)
    target_link_libraries(${target} ${vis} m)
  endif()
  if(RL_NO_THREADS)
    set_property(SOURCE "${out_c}" APPEND PROPERTY COMPILE_DEFINITIONS RL_NO_THREADS)
  else()
    if(NOT TARGET Threads::Threads)
      find_package(Threads REQUIRED)
    endif()
    target_link_libraries(${target} ${vis} Threads::Threads)
  endif()
endfunction()
