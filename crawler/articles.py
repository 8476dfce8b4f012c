# ruff: noqa: E501  (prose)
"""Article texts for the loopback demo and test site (written for this project; public domain).

Each article is a title and a list of paragraphs. They are long enough (500+ words) that a
one-sentence edit moves a 64-bit simhash by a bit or two, and varied enough in topic that two
different articles land far apart.
"""

from __future__ import annotations

from typing import NamedTuple


class Article(NamedTuple):
    slug: str
    title: str
    paragraphs: tuple[str, ...]


HARBOUR_BRIDGE = Article(
    "harbour-bridge",
    "Harbour bridge reopens after eighteen months of repairs",
    (
        "The old swing bridge across the inner harbour reopened to traffic on Tuesday morning, "
        "eighteen months after engineers closed it when a routine inspection found corrosion in "
        "two of the steel girders that carry the roadway over the shipping channel.",
        "A small crowd of residents, shop owners and retired dock workers gathered on the western "
        "approach before dawn to watch the barriers come down. Several of them had crossed the "
        "bridge on foot almost every day of their lives before the closure forced a detour of "
        "nearly four kilometres around the container terminal.",
        "The repair turned out to be far larger than the council first expected. Once the paint "
        "was stripped back, the contractors discovered that water had been seeping into the "
        "riveted joints for decades, and that the original drawings from 1911 did not match what "
        "had actually been built. Every one of the sixty replacement plates had to be measured by "
        "hand, cut in a workshop on the far side of the estuary, and brought in by barge at high tide.",
        "The cost rose from an initial estimate of nine million to a little over fourteen million, "
        "most of it covered by a regional infrastructure grant. Councillors argued for weeks over "
        "whether the money would have been better spent on a new fixed span, but heritage groups "
        "pointed out that the swing mechanism is one of only three of its kind still working in "
        "the country, and that tall ships visiting the maritime festival each summer depend on it.",
        "The mechanism itself was also overhauled. Its central pivot, a cast iron drum the size of "
        "a small car, was lifted out for the first time in living memory, cleaned, and fitted with "
        "new bronze bearings. The electric motors installed in the nineteen sixties were replaced, "
        "but the hand winch that allowed two people to open the bridge during power cuts has been "
        "kept and restored, at the request of the harbour master.",
        "Traffic engineers expect around eleven thousand vehicles a day to return to the route, "
        "along with cyclists who lost their most direct path into the town centre. A new "
        "protected cycle lane has been painted on the eastern side, and the footpath has been "
        "widened by half a metre by moving the railings outward onto the old gas main brackets.",
        "Businesses on Quay Street say the closure cost them dearly. The owner of a bakery that "
        "has stood at the foot of the bridge since before the war said takings fell by a third, "
        "and that two neighbouring cafes did not survive the winter. She hopes the reopening, "
        "timed just ahead of the spring fishing season, will bring back the morning trade.",
        "Not everything is finished. The lighting columns are temporary, and the original lamps, "
        "which were sent to a foundry for restoration, will not be refitted until the autumn. The "
        "bridge will also close for one night next month so that the opening sequence can be "
        "tested under load with a dredger waiting in the channel.",
        "The toll has been abolished.",
        "Engineers who worked on the project describe it as a kind of archaeology. Behind one "
        "of the abutments they found a sealed chamber holding the original counterweight chains, "
        "wrapped in oiled canvas and never used, and a wooden tool chest with the initials of a "
        "blacksmith who, according to the parish records, died in the flu epidemic of 1918.",
        "The chest and its contents, a set of hand forged spanners, a tin of rivets and a folded "
        "newspaper from the week the bridge first opened, have been lent to the maritime museum, "
        "which plans a small exhibition about the people who built and operated the crossing, "
        "including the bridge keepers who lived in the cottage on the eastern bank until 1974.",
        "Safety campaigners have used the reopening to renew calls for a lower speed limit on the "
        "approaches. The road narrows sharply at the western end, and residents say lorries "
        "heading for the ferry terminal often take the bend too fast. The council says it will "
        "monitor speeds for six months before deciding whether cameras are needed.",
        "Schoolchildren from the primary school on Harbour Row painted the hoardings that "
        "screened the works, and their pictures of fishing boats, gulls and ferries will be "
        "displayed in the library during the summer holidays. Several of the children were "
        "invited to ride on the first bus across the bridge.",
        "The council has promised a full inspection every two years from now on, rather than the "
        "six year cycle that allowed the corrosion to spread unnoticed. An independent report on "
        "why the earlier inspections missed the damage is due to be published before the summer.",
        "For the people on the western approach, the politics mattered less than the crossing "
        "itself. As the first bus rolled over the new deck plates, a few of the dock workers "
        "applauded, and one of them said it felt like getting a piece of the town back.",
    ),
)

URBAN_BEES = Article(
    "urban-beekeeping",
    "Why rooftop beehives are multiplying in the city centre",
    (
        "Ten years ago there were perhaps a dozen registered beehives within the ring road. Today "
        "the municipal register lists more than four hundred, spread across office roofs, hotel "
        "terraces, school gardens and the flat top of the central library.",
        "The growth began with a handful of hobbyists who learned the craft from rural relatives, "
        "but it accelerated when companies discovered that a hive on the roof made an appealing "
        "line in a sustainability report. Several firms now pay specialist keepers to install and "
        "manage colonies they rarely visit, and to bottle honey that is handed out to clients.",
        "Ecologists are divided about whether this is good news. Honeybees are managed livestock, "
        "not wild animals, and a dense population of hives competes with the solitary bees, "
        "hoverflies and bumblebees that pollinate many urban plants. A survey by the university "
        "found that wild bee visits to flowering shrubs fell in districts where hive density was highest.",
        "The keepers reply that city forage is unusually rich. Parks, private gardens, street "
        "trees such as lime and horse chestnut, and the weeds that grow along railway embankments "
        "flower in succession from March to October, and the warmth of the city lengthens the "
        "season by several weeks compared with the surrounding farmland, where hedges have been "
        "removed and crops are sprayed.",
        "Honey from the centre is darker and more varied in flavour than most supermarket honey. "
        "Laboratory tests commissioned by one cooperative found pollen from more than ninety plant "
        "species in a single jar, including exotic ornamentals from the botanical garden, and no "
        "detectable traces of the heavy metals that some buyers worry about.",
        "Disease is the greater concern. Varroa mites spread easily between colonies that are "
        "close together, and an outbreak of foulbrood two summers ago forced inspectors to destroy "
        "thirty hives in the old warehouse district. The city now requires every keeper to register "
        "each colony and to allow inspections, and it offers a free course for beginners.",
        "Planners have started to respond by asking developers for more flowering plants rather "
        "than more hives. New rules for green roofs specify a mix of native wildflowers, and a "
        "pilot scheme is turning verges along three arterial roads into meadows that are mown only "
        "twice a year, after the main flowering period.",
        "For now the rooftop keepers remain enthusiastic. On a warm evening on the roof of a "
        "former printing works, a retired teacher lifts a frame heavy with capped honey and points "
        "out the different colours of pollen packed into the cells, orange from dandelion, pale "
        "yellow from clover, almost grey from the lime trees along the canal.",
        "She says the bees have taught her to notice the city differently, to see which streets "
        "flower first in spring and which gardens are left to grow wild, and that she now spends "
        "as much time planting for wild pollinators as she does looking after her own colonies.",
    ),
)

VOLCANO_DRONES = Article(
    "volcano-drones",
    "Drones give volcanologists a closer look at an erupting crater",
    (
        "Scientists monitoring the volcano on the northern peninsula have begun flying drones "
        "directly through the plume above the active crater, collecting gas samples and thermal "
        "images from places no person could safely stand.",
        "The aircraft, small fixed wing models with a range of about forty kilometres, carry "
        "sensors that measure sulphur dioxide, carbon dioxide and hydrogen sulphide several times "
        "a second. By flying transects at different heights, the team can reconstruct the shape of "
        "the plume and estimate how much gas the volcano releases each day.",
        "Those numbers matter because changes in gas output often come before changes in eruptive "
        "behaviour. A rising ratio of carbon dioxide to sulphur dioxide can mean that fresh magma "
        "is moving up from deeper in the system, while a sudden drop can mean that the conduit is "
        "becoming blocked and pressure is building beneath a plug of cooled rock.",
        "Until recently such measurements were made from the ground, by researchers hiking to the "
        "crater rim with heavy instruments, or from crewed aircraft that could not fly low enough "
        "to sample the densest part of the plume. Both approaches were expensive and dangerous, and "
        "neither could be repeated more than a few times a month.",
        "The drones are launched from a field station eight kilometres away and fly pre-programmed "
        "routes, although a pilot can take over at any moment. Heat and acid gas are hard on the "
        "electronics; the team has lost four aircraft so far, one of them to a sudden burst of "
        "ash that clogged its engine within seconds.",
        "Thermal cameras have produced the most striking results. Mosaics of hundreds of images "
        "show the lava lake in the crater floor as a patchwork of cooling crust and glowing cracks, "
        "and repeated surveys reveal how the lake level rises and falls over a period of days.",
        "The data are shared with the civil protection agency, which decides when to close the "
        "hiking trails and the coastal road below the volcano. Officials say the drone surveys "
        "allowed them to reopen the road two weeks earlier than they would otherwise have done, "
        "after measurements showed that gas levels in the lower valley had fallen to safe values.",
        "Local residents have mixed feelings about the buzzing aircraft. Farmers on the lower "
        "slopes complain that the drones disturb their sheep, and a hotel owner worries that the "
        "constant news coverage keeps visitors away. The researchers now publish a weekly flight "
        "schedule and avoid flying over pasture during lambing.",
        "The team hopes to add instruments that can detect the fine ash particles that damage jet "
        "engines, which would help airlines decide when to reroute flights, and to test a fleet "
        "of smaller drones that could fly together and map the whole plume at once.",
    ),
)

LIBRARY = Article(
    "library-reopens",
    "The public library reopens with a workshop, a seed bank and longer hours",
    (
        "After two years of building work, the central public library reopened its doors on "
        "Saturday to a queue that stretched around the square. Inside, visitors found the familiar "
        "reading room with its tall windows, but also a workshop full of sewing machines and 3D "
        "printers, a recording studio and a cabinet of envelopes holding seeds for local gardeners.",
        "The renovation was prompted by a leaking roof and an electrical system that no longer met "
        "safety standards, but the library board used the closure to rethink what the building is "
        "for. Book loans had been falling for a decade, while the number of people using the "
        "computers, the free heating and the study desks had grown every year.",
        "The new layout reflects that shift. Shelving has been reduced by about a fifth, with less "
        "used stock moved to a store in the basement that can be requested online and delivered "
        "within a day. The space freed up has become quiet study rooms that can be booked, and a "
        "large children's area with a small stage for storytelling and puppet shows.",
        "The workshop is the most talked about addition. Anyone with a library card can book time "
        "on the machines after a short safety session, and volunteers run repair evenings where "
        "people bring broken lamps, toasters and bicycles. Organisers say that more than two thirds "
        "of the items brought to the first evening left in working order.",
        "The seed bank works like a lending collection. Gardeners take a packet in spring, grow the "
        "plants, and return seeds from the healthiest ones at the end of the season. Over time the "
        "collection should adapt to the local soil and climate, and it preserves several old "
        "varieties of beans and tomatoes that are no longer sold commercially.",
        "Opening hours have been extended to nine in the evening on weekdays, funded partly by a "
        "reorganisation of staff rotas and partly by a grant from a charitable foundation. The "
        "library also lends laptops and mobile internet routers for up to three weeks, aimed at "
        "students and job seekers who have no connection at home.",
        "Not everyone welcomed the changes. A group of regular readers collected signatures against "
        "the reduction in shelving, arguing that browsing the open stacks is the heart of a library "
        "and that a basement store is no substitute. The board has promised to review the loan "
        "figures after a year and to return popular collections to the open floor if needed.",
        "The head librarian says the building now serves more people in more ways than it did "
        "before, and that books remain at its centre. On opening day the most borrowed title was a "
        "local history of the town's canals, closely followed by a guide to repairing clothes.",
        "The old card catalogue, which had sat unused in the entrance hall for twenty years, has "
        "been restored and turned into a display of letters, photographs and drawings donated by "
        "residents, one small drawer for each street in the old town.",
    ),
)

NIGHT_TRAINS = Article(
    "night-trains",
    "Night trains return as travellers look for alternatives to short flights",
    (
        "A sleeper service linking the capital with three cities on the southern coast will run "
        "again from December, ten years after the route was cancelled for lack of passengers. "
        "Tickets for the first month sold out within two days of going on sale.",
        "The revival is part of a wider trend across the continent. Operators that abandoned night "
        "services in the era of cheap flights are reintroducing them, sometimes in partnership with "
        "neighbouring countries, as travellers look for ways to cut their emissions without giving "
        "up long distance journeys.",
        "Running a sleeper train is not simple. The carriages spend most of the day idle, the "
        "timetable must fit around freight traffic and maintenance work that usually happens at "
        "night, and every border crossing brings a different set of safety rules, electrical "
        "systems and track access charges.",
        "The new service will use refurbished carriages bought from an operator in the north, with "
        "compartments for two or four people, a few cheaper reclining seats, and a small dining car "
        "serving regional food and wine. Each compartment has its own washbasin, and the two "
        "premium carriages have showers.",
        "Rail campaigners welcomed the announcement but warned that prices must stay competitive. "
        "A bed in a shared compartment will cost about the same as a budget flight booked a month "
        "in advance, but a private compartment for two costs considerably more than a flight and a "
        "hotel room combined.",
        "Supporters argue that the comparison misses the point. A traveller who boards in the "
        "evening and arrives in the city centre after breakfast saves a night in a hotel and the "
        "journey to and from the airport, and loses no working day. Business travellers made up "
        "a surprising share of the early bookings, according to the operator.",
        "Environmental groups have calculated that the train emits less than a tenth of the carbon "
        "per passenger of the equivalent flight, even when the extra weight of beds and dining "
        "facilities is taken into account. The figure depends heavily on how the electricity for "
        "the locomotives is generated, which varies from one country to the next.",
        "The government has promised to reduce the track access charges paid by night services for "
        "the first five years, and to study whether a network of sleeper routes could be tendered "
        "as a single contract. Regional politicians along the route are already lobbying for extra "
        "stops in their towns.",
        "For the staff who worked on the old service, the return is personal. One conductor who "
        "spent twelve years on the sleeper before it was withdrawn says he has asked to transfer "
        "back, and that he has kept his old uniform cap in a drawer all this time.",
    ),
)

SOURDOUGH = Article(
    "sourdough-chemistry",
    "The chemistry of sourdough: what happens inside a starter",
    (
        "A sourdough starter is a small ecosystem. Flour and water, left at room temperature and "
        "fed regularly, become home to a stable community of wild yeasts and lactic acid bacteria "
        "that together raise the bread and give it its sour taste.",
        "The bacteria are the majority. They ferment sugars released from the starch of the flour "
        "into lactic and acetic acids, which lower the acidity of the dough to a point where most "
        "other microbes cannot survive. The yeasts tolerate the acid and produce the carbon dioxide "
        "that forms bubbles in the dough, together with small amounts of alcohol.",
        "The balance between the two acids shapes the flavour. Lactic acid gives a mild, creamy "
        "sourness, while acetic acid is sharper and closer to vinegar. Bakers can shift the balance "
        "by changing the temperature and the consistency of the starter: a warm, wet starter "
        "favours lactic acid, a cool, stiff one produces more acetic acid.",
        "Enzymes in the flour play an equally important part. Amylases break starch down into "
        "sugars that feed the microbes, and proteases cut the gluten proteins into shorter pieces. "
        "A long fermentation therefore changes not only the taste of the bread but also its "
        "texture, making the crumb more open and the crust darker when it bakes.",
        "Many people who find ordinary bread hard to digest report that they tolerate sourdough "
        "better. Researchers think this may be because the long fermentation breaks down some of "
        "the fermentable carbohydrates that cause discomfort in sensitive people, although the "
        "evidence is still limited and sourdough is not safe for people with coeliac disease.",
        "The idea that a starter carries the character of the place where it was made is mostly a "
        "myth. Studies that sequenced the microbes in hundreds of starters from around the world "
        "found that the baker's hands and the flour have more influence than the local air, and that "
        "a starter moved to a new kitchen soon adapts to its new conditions.",
        "Starters are also remarkably robust. One left untouched in a refrigerator for months will "
        "usually recover after a few feedings, and a dried starter can be revived years later. "
        "Some bakeries claim to use cultures that are more than a century old, passed from one "
        "generation of bakers to the next.",
        "For home bakers the practical lessons are simple. Feed the starter at regular times, keep "
        "it at a steady temperature, use it when it has roughly doubled in volume, and be patient "
        "with the dough: most of the flavour comes from time rather than from any special "
        "ingredient.",
    ),
)

ENGLISH_ARTICLES = (HARBOUR_BRIDGE, URBAN_BEES, VOLCANO_DRONES, LIBRARY, NIGHT_TRAINS, SOURDOUGH)

WASTE_SORTING_ZH = Article(
    "waste-sorting",
    "垃圾分类实施三年：居民习惯悄然改变",
    (
        "三年前，这座城市开始强制推行生活垃圾分类。起初，很多居民对四种颜色的垃圾桶感到困惑，"
        "不知道用过的纸巾、碎掉的碗碟和过期的药品应该放进哪一个。小区门口经常能看到志愿者手拿"
        "宣传单，一遍又一遍地向老人解释湿垃圾和干垃圾的区别。",
        "如今，定时定点投放已经成为大多数小区的日常。每天早上七点到九点、晚上六点到八点，"
        "居民把厨余垃圾倒进棕色的桶里，再把塑料袋单独扔进旁边的干垃圾桶。一位在小区做了二十年"
        "保洁的阿姨说，过去垃圾房里总是臭气熏天，现在干净多了，夏天也很少招来苍蝇。",
        "根据市环境部门公布的数据，全市每天分出的厨余垃圾从最初的不到一千吨增加到将近九千吨，"
        "可回收物的回收量也翻了一番。进入焚烧厂的垃圾含水量明显下降，焚烧效率随之提高，"
        "填埋场的使用年限也因此延长了好几年。",
        "不过，分类之后的处理能力一度跟不上。厨余垃圾需要专门的处理厂进行发酵和制肥，"
        "而新建的工厂在头一年经常满负荷运转。有居民担心，自己辛辛苦苦分好的垃圾最后又被混在一起"
        "运走。为此，环卫部门在每辆收运车上安装了定位设备，并邀请市民代表到处理厂参观。",
        "社区也想出了不少办法。有的小区用积分奖励正确投放的家庭，积分可以兑换洗衣液和鸡蛋；"
        "有的小区请孩子们当“垃圾分类小老师”，回家监督父母；还有的小区在垃圾房旁边设置了"
        "旧衣物和旧家电的回收点，每个月集中处理一次。",
        "也有人对这项政策提出批评。一些上班族说，固定的投放时间与他们的作息冲突，只能把垃圾"
        "提前一晚放在门口或者带到公司。对此，不少街道增设了延时投放点，并在部分小区试点智能"
        "垃圾箱，居民刷卡后就可以在任何时间投放。",
        "专家认为，垃圾分类真正的目标是减少垃圾的产生。过度包装、一次性餐具和外卖塑料盒仍然是"
        "干垃圾的主要来源。他们建议，在继续完善分类的同时，从生产和消费环节入手，"
        "鼓励商家使用可循环的包装，让垃圾在源头上就变少。",
        "对于许多居民来说，三年的坚持已经变成了一种自然而然的习惯。一位退休教师笑着说，"
        "现在去外地旅游，看到所有垃圾都扔进同一个桶里，反而觉得有些不习惯了。",
    ),
)

HIGH_SPEED_RAIL_ZH = Article(
    "mountain-railway",
    "山区高铁通车：小县城迎来新的发展机会",
    (
        "随着一列白色的动车组缓缓驶入新建的车站，这个位于群山之间的小县城正式迈入了高铁时代。"
        "过去，从县城到省会需要坐六个多小时的长途汽车，沿着盘山公路一路颠簸；如今，"
        "乘坐高铁只需要一小时四十分钟。",
        "这条铁路全长约两百公里，其中超过七成的线路是桥梁和隧道。施工过程中，工程师们遇到了"
        "断层、溶洞和地下暗河等复杂地质条件。为了保护沿线的森林和水源，部分路段改为从山体内部"
        "穿过，最长的一条隧道长达十四公里，建设用了整整五年。",
        "通车的第一个周末，车站里挤满了前来体验的乡亲。一位种了一辈子茶叶的老人专门穿上新衣服，"
        "带着孙子坐车去省城看望在那里工作的女儿。他说，以前一年只能见一两次面，"
        "以后周末就可以来回了。",
        "当地政府希望高铁能带动旅游业的发展。县城周边有保存完好的古村落、梯田和溶洞，"
        "但由于交通不便，过去游客很少。通车前后，已经有几家旅行社推出了周末线路，"
        "一些在外打工的年轻人也开始回乡开办民宿和农家餐馆。",
        "农产品的销售也出现了新的变化。借助高铁快运，当天采摘的新鲜竹笋和茶叶第二天就能送到"
        "大城市的超市。县里的电商服务中心负责人说，今年春茶的线上销量比去年增长了将近一倍。",
        "也有人担心，交通便利之后，县城的人口和消费会被大城市吸走，年轻人更容易离开家乡，"
        "本地的商店和医院也可能面临更大的竞争压力。专家提醒，高铁只是提供了机会，"
        "能否留住人、吸引人，还要看当地能否发展出有特色的产业。",
        "傍晚，最后一班列车驶出车站，站前广场上跳广场舞的人群渐渐散去。车站旁边的小卖部老板"
        "说，他打算把店面扩大一倍，再添几样本地特产，等着明年旅游旺季的到来。",
    ),
)
