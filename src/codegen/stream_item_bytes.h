// Ring slot sizes for stream programs whose channels carry items of several types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stream/schedule.h"
#include "stream/stream_ir.h"

namespace cleave {

/// Per channel, the bytes of the largest item it carries: the channel's one type where
/// `items` knows it, else found by firing the init schedule and two steady-state iterations
/// (in node order, as the generated program fires them) on item types instead of tensors,
/// program input items of `input_item`. A channel whose items all turn out to be of one type
/// (a separator picking the same kind of item every time) gets that type in `items`. A model
/// filter pushes each output cut into its share of `push` items, as `cleave stream run` does.
/// Throws Error naming `origin` and the filter for a concat of items of different types.
std::vector<int64_t> channel_item_bytes(const StreamGraph& flat, const StreamSchedule& schedule,
                                        const ItemType& input_item,
                                        std::vector<std::optional<ItemType>>& items,
                                        const std::string& origin);

}  // namespace cleave
