// KernelRegistry: which registered kernel a node gets (opset range, input types, the most inputs a kernel takes) and
// what HasOp answers the fusion passes (graph/passes/graph_rewrite.h CanFuse).
#include <gtest/gtest.h>

#include "tessera/ep/kernel.h"

namespace tessera::test {
namespace {

class NoOpKernel : public Kernel {
 public:
  explicit NoOpKernel(const KernelInfo&) {}
  void Compute(KernelContext&) const override {}
};

KernelDef AttentionDef(size_t max_inputs) {
  KernelDef def;
  def.op_type = "Attention";
  def.domain = "ai.tessera";
  def.max_inputs = max_inputs;
  return def;
}

Node AttentionNode(size_t inputs) {
  Node node;
  node.op_type = "Attention";
  node.domain = "ai.tessera";
  node.opset = 1;
  static const char* const kNames[] = {"q", "k", "v", "mask", "k_at", "k_new", "v_at", "v_new"};
  for (size_t i = 0; i < inputs; ++i) node.inputs.push_back(kNames[i]);
  return node;
}

TEST(KernelRegistryTest, AKernelTakesNoNodeWithInputsPastItsMost) {
  KernelRegistry registry;
  registry.Register<NoOpKernel>(AttentionDef(4));
  Graph graph;
  EXPECT_NE(registry.Find(AttentionNode(3), graph), nullptr);
  EXPECT_NE(registry.Find(AttentionNode(4), graph), nullptr);
  EXPECT_EQ(registry.Find(AttentionNode(8), graph), nullptr);
  // Omitted optional inputs past the most ("" names) do not count.
  Node omitted = AttentionNode(4);
  omitted.inputs.resize(8);
  EXPECT_NE(registry.Find(omitted, graph), nullptr);
  EXPECT_TRUE(registry.HasOp("Attention", "ai.tessera"));
  EXPECT_TRUE(registry.HasOp("Attention", "ai.tessera", 4));
  EXPECT_FALSE(registry.HasOp("Attention", "ai.tessera", 8));
  EXPECT_FALSE(registry.HasOp("Attention", ""));
  // Another registration of the op that takes the longer form answers for it.
  registry.Register<NoOpKernel>(AttentionDef(8));
  EXPECT_TRUE(registry.HasOp("Attention", "ai.tessera", 8));
  EXPECT_NE(registry.Find(AttentionNode(8), graph), nullptr);
}

// Extension attributes (kExtensionAttributes): a node carrying one goes only to a kernel that lists it, so an EP
// whose fused kernel lacks it leaves the node to another EP.
TEST(KernelRegistryTest, ANodeWithAnExtensionAttributeNeedsAKernelThatImplementsIt) {
  Graph graph;
  Node node;
  node.op_type = "FusedConv";
  node.domain = "ai.tessera";
  node.opset = 1;
  node.inputs = {"x", "w"};
  KernelDef plain;
  plain.op_type = "FusedConv";
  plain.domain = "ai.tessera";
  KernelRegistry without;
  without.Register<NoOpKernel>(plain);
  EXPECT_NE(without.Find(node, graph), nullptr);
  Attribute clip;
  clip.name = "activation_clip";
  clip.type = Attribute::Type::kFloats;
  clip.floats = {-1.0f, 1.0f};
  node.attributes["activation_clip"] = clip;
  EXPECT_EQ(without.Find(node, graph), nullptr);
  KernelDef extended = plain;
  extended.extension_attributes = {"activation_clip"};
  KernelRegistry with;
  with.Register<NoOpKernel>(extended);
  EXPECT_NE(with.Find(node, graph), nullptr);
}

}  // namespace
}  // namespace tessera::test
