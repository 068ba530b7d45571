// The source that target nonlocal::depth_instances adds to the targets that link it: the depth
// tasks' solves compiled once for the program (nonlocal/depth/instances.hpp).
#include <nonlocal/depth/instances.hpp>
