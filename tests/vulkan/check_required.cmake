# Every Vulkan entry point the backend calls is either in VK_REQUIRED of
# vk_loader.c (checked non-NULL once the instance functions are loaded) or
# one of the optional ones, each checked where it is used.
set(optional vkGetInstanceProcAddr vkCreateInstance vkEnumerateInstanceVersion
    vkGetPhysicalDeviceCooperativeMatrixPropertiesNV vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR
    vkGetPipelineExecutableStatisticsKHR)
file(READ ${SRC}/vk_loader.c loader)
# the macro runs from its #define to the first empty line
string(FIND "${loader}" "#define VK_REQUIRED(X)" start)
string(SUBSTRING "${loader}" ${start} -1 required)
string(FIND "${required}" "\n\n" end)
string(SUBSTRING "${required}" 0 ${end} required)
file(GLOB sources ${SRC}/*.c)
set(missing "")
foreach(f ${sources})
  file(READ ${f} text)
  string(REGEX MATCHALL "vk[A-Z][A-Za-z0-9]*[ ]*\\(" calls "${text}")
  foreach(c ${calls})
    string(REGEX REPLACE "[ ]*\\($" "" name "${c}")
    list(FIND optional ${name} opt)
    if(opt EQUAL -1 AND NOT required MATCHES "X\\(${name}\\)")
      list(APPEND missing ${name})
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES missing)
if(missing)
  message(FATAL_ERROR "called but not in VK_REQUIRED (vk_loader.c): ${missing}")
endif()
message(STATUS "every called Vulkan entry point is checked")
