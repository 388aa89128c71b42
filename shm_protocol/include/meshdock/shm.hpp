// Umbrella header for the meshdock shared-memory protocol (header-only).
#pragma once

#include "meshdock/shm/catalog.hpp"
#include "meshdock/shm/control_block.hpp"
#include "meshdock/shm/error.hpp"
#include "meshdock/shm/futex.hpp"
#include "meshdock/shm/manifest.hpp"
#include "meshdock/shm/names.hpp"
#include "meshdock/shm/process.hpp"
#include "meshdock/shm/registration.hpp"
#include "meshdock/shm/segment.hpp"
#include "meshdock/shm/sigbus_guard.hpp"
