#include "query/id_salts.h"

#include "keying/row_key.h"

namespace hotrow::query {

IdSalts::IdSalts(const keying::Salter& salter, std::string_view id)
    : id_hash_(keying::IdHash(id)), adaptive_(salter.salt_by() == keying::SaltBy::kAdaptive) {
  for (int s = 0; s < salter.salts(); ++s) all_.push_back(static_cast<uint8_t>(s));
  switch (salter.salt_by()) {
    case keying::SaltBy::kId:
      narrow_.push_back(salter.SaltOfId(id));
      break;
    case keying::SaltBy::kAdaptive:
      narrow_.push_back(salter.HomeSalt(id_hash_));
      break;
    case keying::SaltBy::kRecord:
      break;
  }
}

}  // namespace hotrow::query
