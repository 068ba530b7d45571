# nonlocal-refine --sensor: a preset sets what its help says, and an explicit option wins.
# Each run's report says the robust term's rounds: one with --sensor stereo, none with
# --sensor tof or with --sensor stereo --robust-iterations 0.
#   cmake -DTOOL=<nonlocal-refine> -DGUIDE=<png> -DDEPTH=<png> -DWORK=<dir> -P sensor_presets.cmake
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

# Runs the tool with `ARGN` and checks its report line matches `expected`.
function(expect_report name expected)
  execute_process(COMMAND "${TOOL}" --guide "${GUIDE}" --depth "${DEPTH}" --out "${WORK}/${name}.npy"
                          --report "${WORK}/${name}.jsonl" --quiet ${ARGN}
                  RESULT_VARIABLE status ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${name}: nonlocal-refine ${ARGN} exited with ${status}: ${errors}")
  endif()
  file(READ "${WORK}/${name}.jsonl" report)
  if(NOT report MATCHES "${expected}")
    message(FATAL_ERROR "${name}: nonlocal-refine ${ARGN} reported\n${report}which does not match ${expected}")
  endif()
  message("${name}: ${expected}")
endfunction()

expect_report(stereo "\"robust_iterations\": 1[,}]" --sensor stereo)
expect_report(structured_light "\"robust_iterations\": 1[,}]" --sensor structured-light)
expect_report(stereo_without_robust_term "\"robust_iterations\": 0[,}]" --sensor stereo --robust-iterations 0)
expect_report(tof "\"robust_iterations\": 0[,}]" --sensor tof)
expect_report(clean "\"robust_iterations\": 0[,}]" --sensor clean)

# An unknown sensor is refused before anything runs, naming the option.
execute_process(COMMAND "${TOOL}" --guide "${GUIDE}" --depth "${DEPTH}" --out "${WORK}/x.npy" --sensor kinect
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE errors)
if(NOT status EQUAL 1 OR NOT "${out}${errors}" MATCHES "--sensor: kinect not in")
  message(FATAL_ERROR "--sensor kinect: exit ${status}, said ${out}${errors}")
endif()
if(EXISTS "${WORK}/x.npy")
  message(FATAL_ERROR "--sensor kinect wrote ${WORK}/x.npy")
endif()
