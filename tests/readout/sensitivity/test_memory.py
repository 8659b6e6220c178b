"""The memory model of the sensitivity pass (vidcorr.readout.sensitivity.memory)."""

from vidcorr.model.spec import NetworkSpec, layer_plan, padded_size, receptive_radius
from vidcorr.readout.sensitivity import memory

SPEC = NetworkSpec(width=0.25, output_kernel=1, kernel_size=9)


def test_pixel_extent_is_the_image_until_a_window_pays():
    assert memory.pixel_extent(SPEC, 96, 128) == padded_size(96, 128)  # small: whole image
    side = 2 * receptive_radius(layer_plan(SPEC, 720, 1280)) + 2
    assert memory.pixel_extent(SPEC, 720, 1280) == (side, side)  # large: a window
    assert memory.pixel_extent(SPEC, 720, 1280, fraction=0.0) == padded_size(720, 1280)
    assert memory.pixel_extent(SPEC, 720, 1280, fraction=1.0) == (side, side)


def test_chunk_for_budget_grows_with_the_budget_within_bounds():
    budgets = (1, 1000, 2000, 10 ** 6)
    chunks = [memory.chunk_for_budget(SPEC, 288, 384, mb) for mb in budgets]
    assert chunks[0] == 1 and chunks[-1] == memory.MAX_CHUNK
    assert chunks == sorted(chunks) and len(set(chunks)) == 4
    # below the cap, the chunk is the most pixels that fit in what the budget leaves
    for mb, chunk in zip(budgets[1:3], chunks[1:3]):
        free = mb * 2 ** 20 - memory.fixed_bytes(SPEC, 288, 384)
        assert chunk * memory.activation_bytes_per_pixel(SPEC, 288, 384) <= free
        assert (chunk + 1) * memory.activation_bytes_per_pixel(SPEC, 288, 384) > free


def test_a_dense_pass_costs_more_per_pixel_on_a_large_image():
    windowed = memory.activation_bytes_per_pixel(SPEC, 720, 1280)
    dense = memory.activation_bytes_per_pixel(SPEC, 720, 1280, fraction=0.0)
    assert dense > 3 * windowed
