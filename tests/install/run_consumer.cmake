# Installs onnxopt into a scratch prefix, then configures, builds and runs tests/install/consumer
# against it with find_package(onnxopt). Run with cmake -P (see tests/CMakeLists.txt).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGV}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/consumer)
# The CUDA runtime is a provider loaded on demand: the consumer links no CUDA library.
execute_process(COMMAND ldd ${WORK_DIR}/build/consumer OUTPUT_VARIABLE needed RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR needed MATCHES "lib(cudart|cudnn|cublas)")
  message(FATAL_ERROR "the consumer links a CUDA library (ldd: ${rc}):\n${needed}")
endif()
